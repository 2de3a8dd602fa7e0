// Starts attempts through one long-lived sh (launcher.sh), which forks a supervisor (supervisor.sh)
// per attempt. The supervisors tell us on the launcher's stdout when a job started and exited. The
// launcher works in the attempts folder: it hears and tells attempts by their folder's name.

import { type ChildProcess, spawn } from "node:child_process";
import { EventEmitter } from "node:events";
import { join, relative } from "node:path";
import { createInterface } from "node:readline";

const LAUNCHER = join(import.meta.dirname, "launcher.sh");
const SUPERVISOR = join(import.meta.dirname, "supervisor.sh");

export class Launcher extends EventEmitter<{ started: [string, number]; exited: [string, number] }> {
  private child: ChildProcess | null = null;
  private closed = false;
  /** The folder of the attempt folders: the launcher works there, and is told only their names. */
  private readonly root: string;

  constructor(root: string) {
    super();
    this.root = root;
  }

  start(): void {
    this.closed = false;
    // Its own session: a terminal's Ctrl-C to the agent does not reach the supervisors.
    const child = spawn("/bin/sh", [LAUNCHER, SUPERVISOR], {
      cwd: this.root,
      stdio: ["pipe", "pipe", "ignore"],
      detached: true,
    });
    this.child = child;
    child.stdin?.on("error", () => {});
    createInterface({ input: child.stdout! }).on("line", (line) => this.parse(line));
    child.once("exit", () => {
      if (this.child === child) this.child = null;
      if (!this.closed) this.start();
    });
    child.unref();
  }

  /** Starts the attempt of folder `dir`, one in the root. */
  launch(dir: string): void {
    if (!this.child) this.start();
    // Its name alone: the launcher's shell reads its input one byte a call.
    this.child!.stdin!.write(`${relative(this.root, dir)}\n`);
  }

  close(): void {
    this.closed = true;
    this.child?.stdin?.end();
    this.child = null;
  }

  private parse(line: string): void {
    const match = /^(started|exited) (\d+) (.+)$/.exec(line);
    if (!match) return;
    const dir = join(this.root, match[3]);
    if (match[1] === "started") this.emit("started", dir, Number(match[2]));
    else this.emit("exited", dir, Number(match[2]));
  }
}

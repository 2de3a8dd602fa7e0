// Starts attempts through one long-lived launcher process. Where the host has a C compiler,
// launcher.c, compiled once and kept: it starts each job with vfork (no copy of its own memory),
// makes its session and execs it, and, as the jobs' parent, records their exits. Where it has
// perl (with its POSIX module, in every perl), launcher.pl does the same with a fork. Otherwise
// launcher.sh, a shell that forks a supervisor (supervisor.sh) per attempt, which runs job.sh and
// execs `setsid`. Each tells us on its stdout when a job started and exited. The launcher works in
// the attempts folder: it hears and tells attempts by their folder's name.

import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import { EventEmitter } from "node:events";
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { join, relative } from "node:path";
import { inheritedEnvironment } from "../attempt/inherited-environment.ts";
import { untrustedLauncherCache } from "./launcher-cache-trust.ts";

export const SHELL_LAUNCHER = join(import.meta.dirname, "launcher.sh");
export const SUPERVISOR = join(import.meta.dirname, "supervisor.sh");
export const PERL_LAUNCHER = join(import.meta.dirname, "launcher.pl");
export const C_LAUNCHER_SOURCE = join(import.meta.dirname, "launcher.c");

/**
 * Which launcher starts attempts: `c` (launcher.c, compiled), `perl` (launcher.pl) or `sh`
 * (launcher.sh and supervisor.sh).
 */
export type LauncherKind = "c" | "perl" | "sh";

/**
 * What the environment variable STEWARD_LAUNCHER may ask for; `auto` (the default) takes the first
 * of c, perl and sh that runs here.
 */
export const LAUNCHER_CHOICES = ["auto", "c", "perl", "sh"] as const;

/**
 * How a job starts (launcher.pl's `exec`): its run folder, umask (absent: the agent's), the
 * cgroup.procs files it joins first, the variables set over the environment it inherits from the
 * launcher (the agent's), and its argv (a string command is `/bin/sh -c` and the string).
 */
export interface JobExec {
  cwd: string;
  umask?: number;
  cgroupProcs: readonly string[];
  env: Readonly<Record<string, string>>;
  argv: readonly string[];
}

/** One attempt to start: by its folder, its CPU time recorded in `times` or not, and how it runs. */
export interface LaunchRequest {
  dir: string;
  /** Whether the launcher writes the job's CPU time to `times` (an attempt without a cgroup). */
  times: boolean;
  /** How the job runs; null: the attempt's job.sh runs in a shell (a job of another account). */
  exec: JobExec | null;
}

/**
 * The launcher to use: `choice` (from STEWARD_LAUNCHER), or with `auto`, the compiled one where
 * launcher.c compiles (or was compiled), else perl when `perl -MPOSIX` runs here, else the shell.
 * Asking for one that does not run here is an error.
 */
export function chooseLauncher(choice: string | undefined): LauncherKind {
  const wanted = choice === undefined || choice === "" ? "auto" : choice;
  if (!(LAUNCHER_CHOICES as readonly string[]).includes(wanted))
    throw new Error(`STEWARD_LAUNCHER must be one of ${LAUNCHER_CHOICES.join(", ")}, not ${wanted}`);
  if (wanted === "sh") return "sh";
  if ((wanted === "auto" || wanted === "c") && compiledLauncher() !== null) return "c";
  if (wanted === "c")
    throw new Error(`STEWARD_LAUNCHER=c, but launcher.c does not compile here (${compileFailure})`);
  if (perlRuns()) return "perl";
  if (wanted === "perl") throw new Error("STEWARD_LAUNCHER=perl, but `perl -MPOSIX` does not run here");
  return "sh";
}

/**
 * Where the compiled launchers are kept, each in a folder named by its source's hash: beside
 * Node's compile cache of the sources (bin/steward's), which is trusted alike; STEWARD_LAUNCHER_CACHE
 * names another.
 */
function launcherCache(): string {
  return process.env.STEWARD_LAUNCHER_CACHE || DEFAULT_LAUNCHER_CACHE;
}

/** Where compiled launchers are kept when STEWARD_LAUNCHER_CACHE names no other place. */
export const DEFAULT_LAUNCHER_CACHE = join(
  import.meta.dirname,
  "..",
  "..",
  "..",
  "node_modules",
  ".cache",
  "steward-launcher",
);

let compiled: string | null | undefined;
let compileFailure = "";
let cacheWarning: string | null = null;

/**
 * Why the compiled launcher kept in the cache was not used though it may be there (a cache or a
 * program of another account, or one others may write), for the agent to log as a warning; null
 * when nothing was refused. Asked after compiledLauncher (chooseLauncher).
 */
export function launcherCacheWarning(): string | null {
  return cacheWarning;
}

/**
 * The program compiled from launcher.c (`cc`, or $CC), compiled on first need and kept: asked once
 * a process. Null where there is no compiler or it fails (the reason in compileFailure).
 */
export function compiledLauncher(): string | null {
  if (compiled !== undefined) return compiled;
  compiled = null;
  try {
    const source = readFileSync(C_LAUNCHER_SOURCE);
    // One folder a version of the source and a kind of machine: an installation shared by hosts
    // of several kinds (a network file system) keeps a program for each.
    const hash = createHash("sha256").update(source).digest("hex").slice(0, 16);
    const folder = join(launcherCache(), `${hash}-${process.platform}-${process.arch}`);
    // Named `launcher`: the jobs' parent is called that in `ps`.
    const program = join(folder, "launcher");
    mkdirSync(folder, { recursive: true, mode: 0o755 });
    // The kept program runs every job (as root where the agent is): never one that another
    // account made or could have changed.
    const untrusted = untrustedLauncherCache(launcherCache(), folder, program, process.geteuid?.() ?? 0);
    if (untrusted !== null) {
      compileFailure = `the launcher cache is not trusted: ${untrusted}`;
      cacheWarning = `${compileFailure}; jobs start through the interpreted launcher (perl or sh) instead: make the cache the agent's account's alone (chmod go-w, chown) or set STEWARD_LAUNCHER_CACHE to such a folder`;
      return null;
    }
    if (existsSync(program)) {
      if (launcherRuns(program)) compiled = program;
      else compileFailure = `${program} does not run here`;
      return compiled;
    }
    // Agents starting together each compile to a file of their own; the first rename wins.
    const partial = `${program}.${process.pid}.tmp`;
    const result = spawnSync(process.env.CC || "cc", ["-O2", "-o", partial, C_LAUNCHER_SOURCE], {
      stdio: ["ignore", "ignore", "pipe"],
      timeout: 60_000,
    });
    if (result.status !== 0) {
      compileFailure = result.error
        ? result.error.message
        : `cc exited ${result.status}: ${result.stderr.toString().trim().split("\n")[0] ?? ""}`;
      rmSync(partial, { force: true });
      return null;
    }
    if (!launcherRuns(partial)) {
      compileFailure = "the compiled launcher does not run";
      rmSync(partial, { force: true });
      return null;
    }
    renameSync(partial, program);
    compiled = program;
  } catch (error) {
    compileFailure = (error as Error).message;
  }
  return compiled;
}

/** Whether the compiled launcher runs here: with nothing on its stdin it exits at once, with 0. */
function launcherRuns(program: string): boolean {
  return (
    spawnSync(program, [], { input: "", stdio: ["pipe", "ignore", "ignore"], timeout: 10_000 }).status === 0
  );
}

let perlFound: boolean | null = null;

/** Whether `perl -MPOSIX` runs here: asked once a process (`up` starts several agents). */
function perlRuns(): boolean {
  perlFound ??= spawnSync("perl", ["-MPOSIX", "-e", "1"], { stdio: "ignore", timeout: 10_000 }).status === 0;
  return perlFound;
}

/**
 * An attempt as launcher.c and launcher.pl read it: a count, then that many fields, each ended by a NUL byte.
 * No field can hold a NUL (nor can an argument or a variable's value of any program).
 */
export function encodeLaunch(root: string, request: LaunchRequest): string {
  const fields = [relative(root, request.dir), request.times ? "1" : "0"];
  const { exec } = request;
  if (exec === null) fields.push("script");
  else
    fields.push(
      "exec",
      exec.cwd,
      exec.umask === undefined ? "" : exec.umask.toString(8).padStart(4, "0"),
      String(exec.cgroupProcs.length),
      ...exec.cgroupProcs,
      String(Object.keys(exec.env).length),
      ...Object.entries(exec.env).map(([name, value]) => `${name}=${value}`),
      ...exec.argv,
    );
  for (const field of fields)
    if (field.includes("\0")) throw new Error("the job's command or environment holds a NUL byte");
  return `${fields.length}\0${fields.map((field) => `${field}\0`).join("")}`;
}

/**
 * A launcher's line: a job started (its pid) or exited (its code), by its folder's name. The
 * compiled launcher tells a start with the job's start time in /proc's clock ticks
 * (`started PID:TICKS NAME`), which it has also written under the pid in the pid file.
 */
export interface LauncherLine {
  kind: "started" | "exited";
  value: number;
  name: string;
  /** With a start: when the job started, in clock ticks since boot (/proc/PID/stat), when the launcher read it. */
  startTicks?: string;
}

/** The lines of a launcher's output that say something (others are passed over). */
export function parseLauncherLines(text: string): LauncherLine[] {
  const lines: LauncherLine[] = [];
  for (const line of text.split("\n")) {
    const match = /^(started|exited) (\d+)(?::(\d+))? (.+)$/.exec(line);
    if (!match) continue;
    const kind = match[1] as LauncherLine["kind"];
    lines.push({
      kind,
      value: Number(match[2]),
      name: match[4],
      ...(kind === "started" && match[3] !== undefined ? { startTicks: match[3] } : {}),
    });
  }
  return lines;
}

/** A job's start as the launcher tells it. */
export interface LaunchedJob {
  dir: string;
  pid: number;
  /** The same read also said the job exited (a short job): its timers need not be armed. */
  exited: boolean;
  /** Its start time in clock ticks, recorded in the pid file by the launcher; absent: the agent records it. */
  startTicks?: string;
}

export class Launcher extends EventEmitter<{ started: [LaunchedJob]; exited: [string, number] }> {
  readonly kind: LauncherKind;
  private child: ChildProcess | null = null;
  private closed = false;
  /** The folder of the attempt folders: the launcher works there, and is told only their names. */
  private readonly root: string;

  constructor(root: string, kind: LauncherKind) {
    super();
    this.root = root;
    this.kind = kind;
  }

  start(): void {
    this.closed = false;
    const [program, args] =
      this.kind === "c"
        ? [compiledLauncher()!, []]
        : this.kind === "perl"
          ? ["perl", [PERL_LAUNCHER]]
          : ["/bin/sh", [SHELL_LAUNCHER, SUPERVISOR]];
    // Its own session: a terminal's Ctrl-C to the agent does not reach the launcher or the jobs.
    const child = spawn(program, args, {
      cwd: this.root,
      // Jobs inherit the launcher's environment: the agent's, less Steward's own settings.
      env: inheritedEnvironment(process.env),
      stdio: ["pipe", "pipe", "ignore"],
      detached: true,
    });
    this.child = child;
    child.stdin?.on("error", () => {});
    // Read as it comes, whole lines only: a read often holds a short job's start and its exit.
    let partial = "";
    child.stdout!.setEncoding("utf8");
    child.stdout!.on("data", (chunk: string) => {
      const text = partial + chunk;
      const end = text.lastIndexOf("\n");
      partial = text.slice(end + 1);
      if (end >= 0) this.parse(text.slice(0, end));
    });
    child.once("exit", () => {
      if (this.child === child) this.child = null;
      if (!this.closed) this.start();
    });
    child.unref();
  }

  /** Starts an attempt whose folder (one in the root) is prepared. */
  launch(request: LaunchRequest): void {
    if (!this.child) this.start();
    // The shell launcher is told the folder's name alone (it reads its input one byte a call) and
    // runs its job.sh; launcher.c and launcher.pl are told how the job runs.
    this.child!.stdin!.write(
      this.kind === "sh" ? `${relative(this.root, request.dir)}\n` : encodeLaunch(this.root, request),
    );
  }

  close(): void {
    this.closed = true;
    this.child?.stdin?.end();
    this.child = null;
  }

  private parse(text: string): void {
    const lines = parseLauncherLines(text);
    const exited = new Set(lines.filter((line) => line.kind === "exited").map((line) => line.name));
    for (const line of lines) {
      const dir = join(this.root, line.name);
      if (line.kind === "started")
        this.emit("started", {
          dir,
          pid: line.value,
          exited: exited.has(line.name),
          ...(line.startTicks !== undefined ? { startTicks: line.startTicks } : {}),
        });
      else this.emit("exited", dir, line.value);
    }
  }
}

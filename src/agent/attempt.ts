// One attempt on this host: stage inputs in, run the command in its own process group with
// stdout and stderr going to files, stop it on request (SIGTERM, grace, SIGKILL) or at its time
// limit, stage outputs out, and say how it ended.

import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream, openAsBlob } from "node:fs";
import { chmod, mkdir, open, rm, stat } from "node:fs/promises";
import { constants as osConstants } from "node:os";
import { dirname, join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { AgentOutcome, StartMessage } from "../protocol/messages.ts";
import { agentFileRoutes } from "../protocol/messages.ts";

export interface AttemptContext {
  /** Base URL of the server that sent the start (for files). */
  serverUrl: () => string;
  joinToken: string;
  hostName: string;
  workDir: string;
}

export interface AttemptResult {
  outcome: AgentOutcome;
  exitCode: number | null;
  reason: string | null;
  outputs: string[];
}

type StopOutcome = "cancelled" | "preempted" | "migrated" | "lost" | "timed_out";

export class Attempt {
  readonly spec: StartMessage;
  readonly dir: string;
  readonly runDir: string;
  readonly stdoutPath: string;
  readonly stderrPath: string;
  pid: number | null = null;
  /** Bytes of stdout and stderr already sent to the server. */
  readonly sent = { stdout: 0, stderr: 0 };
  private child: ChildProcess | null = null;
  private stopRequest: { outcome: StopOutcome; reason: string } | null = null;
  private killTimer: NodeJS.Timeout | null = null;
  private limitTimer: NodeJS.Timeout | null = null;
  private exited = false;
  private readonly context: AttemptContext;

  constructor(spec: StartMessage, context: AttemptContext) {
    this.spec = spec;
    this.context = context;
    this.dir = join(context.workDir, "attempts", `${spec.jobId}.${spec.taskIndex}.${spec.attempt}`);
    this.runDir = join(this.dir, "run");
    this.stdoutPath = join(this.dir, "stdout");
    this.stderrPath = join(this.dir, "stderr");
  }

  get key(): string {
    return `${this.spec.jobId}/${this.spec.taskIndex}/${this.spec.attempt}`;
  }

  /** Runs the attempt to its end. `onStarted` is called once the process exists. */
  async run(onStarted: (pid: number) => void): Promise<AttemptResult> {
    try {
      await mkdir(this.runDir, { recursive: true });
      await mkdir(join(this.dir, "checkpoint"), { recursive: true });
      await this.stageIn();
    } catch (error) {
      return {
        outcome: "lost",
        exitCode: null,
        reason: `staging inputs failed: ${message(error)}`,
        outputs: [],
      };
    }
    if (this.stopRequest) return this.stoppedBeforeStart();
    const exit = await this.execute(onStarted);
    const stop = this.requestedStop();
    if (stop) return { outcome: stop.outcome, exitCode: exit.code, reason: stop.reason, outputs: [] };
    if (exit.code !== 0) {
      return { outcome: "failed", exitCode: exit.code, reason: exit.reason, outputs: [] };
    }
    try {
      const outputs = await this.stageOut();
      return { outcome: "succeeded", exitCode: 0, reason: null, outputs };
    } catch (error) {
      return {
        outcome: "lost",
        exitCode: 0,
        reason: `staging outputs failed: ${message(error)}`,
        outputs: [],
      };
    }
  }

  /** Stop request: SIGTERM to the process group, then SIGKILL after the grace period. */
  stop(outcome: StopOutcome, reason: string, graceSeconds: number): void {
    if (this.stopRequest) return;
    this.stopRequest = { outcome, reason };
    if (!this.child || this.exited) return;
    this.signal("SIGTERM");
    this.killTimer = setTimeout(() => this.signal("SIGKILL"), graceSeconds * 1000);
  }

  kill(): void {
    this.stopRequest ??= { outcome: "lost", reason: "killed" };
    this.signal("SIGKILL");
  }

  async cleanup(): Promise<void> {
    await rm(this.dir, { recursive: true, force: true });
  }

  /** A method, not the field, so that the compiler does not assume it unchanged across awaits. */
  private requestedStop(): { outcome: StopOutcome; reason: string } | null {
    return this.stopRequest;
  }

  private stoppedBeforeStart(): AttemptResult {
    const request = this.stopRequest!;
    return { outcome: request.outcome, exitCode: null, reason: request.reason, outputs: [] };
  }

  private signal(signal: NodeJS.Signals): void {
    if (this.pid === null || this.exited) return;
    try {
      process.kill(-this.pid, signal);
    } catch {
      // The group is gone already.
    }
  }

  private environment(): NodeJS.ProcessEnv {
    const { spec, context } = this;
    return {
      ...process.env,
      ...spec.env,
      STEWARD_JOB_ID: spec.jobId,
      STEWARD_TASK_INDEX: String(spec.taskIndex),
      STEWARD_ATTEMPT: String(spec.attempt),
      STEWARD_RESTARTED: spec.restarted ? "1" : "0",
      STEWARD_CHECKPOINT_DIR: join(this.dir, "checkpoint"),
      STEWARD_PROGRESS_FILE: join(this.dir, "progress"),
      STEWARD_HOST: context.hostName,
    };
  }

  private async execute(
    onStarted: (pid: number) => void,
  ): Promise<{ code: number | null; reason: string | null }> {
    const out = await open(this.stdoutPath, "a");
    const err = await open(this.stderrPath, "a");
    const [file, args] =
      typeof this.spec.command === "string"
        ? ["/bin/sh", ["-c", this.spec.command]]
        : [this.spec.command[0], this.spec.command.slice(1)];
    try {
      return await new Promise((resolve) => {
        const child = spawn(file, args, {
          cwd: this.runDir,
          env: this.environment(),
          stdio: ["ignore", out.fd, err.fd],
          detached: true,
        });
        this.child = child;
        child.once("error", (error: NodeJS.ErrnoException) => {
          this.exited = true;
          const code = error.code === "ENOENT" ? 127 : error.code === "EACCES" ? 126 : 1;
          resolve({ code, reason: `cannot run ${file}: ${error.code ?? error.message}` });
        });
        child.once("spawn", () => {
          this.pid = child.pid ?? null;
          if (this.pid !== null) onStarted(this.pid);
          if (this.stopRequest) this.signal("SIGTERM");
          if (this.spec.timeLimitSeconds) {
            this.limitTimer = setTimeout(() => {
              this.stop(
                "timed_out",
                `time limit of ${this.spec.timeLimitSeconds} s reached`,
                this.spec.graceSeconds,
              );
            }, this.spec.timeLimitSeconds * 1000);
          }
        });
        child.once("exit", (code, signal) => {
          this.exited = true;
          if (this.killTimer) clearTimeout(this.killTimer);
          if (this.limitTimer) clearTimeout(this.limitTimer);
          // Whatever the job left running in its group goes with it.
          if (this.pid !== null) {
            try {
              process.kill(-this.pid, "SIGKILL");
            } catch {}
          }
          if (signal) {
            const number = osConstants.signals[signal] ?? 0;
            resolve({ code: 128 + number, reason: `killed by ${signal}` });
          } else {
            resolve({ code: code ?? 1, reason: code === 0 ? null : `exit code ${code}` });
          }
        });
      });
    } finally {
      await out.close();
      await err.close();
    }
  }

  private async stageIn(): Promise<void> {
    const { spec, context } = this;
    for (const path of spec.inputs) {
      const target = join(this.runDir, path);
      await mkdir(dirname(target), { recursive: true });
      const response = await fetch(context.serverUrl() + agentFileRoutes.input(spec.jobId, path), {
        headers: { authorization: `Bearer ${context.joinToken}` },
      });
      if (!response.ok || !response.body) throw new Error(`GET input ${path}: HTTP ${response.status}`);
      await pipeline(Readable.fromWeb(response.body), createWriteStream(target));
      // Inputs are often the program itself (GridWay stages the executable): let it run.
      await chmod(target, 0o755);
    }
  }

  private async stageOut(): Promise<string[]> {
    const { spec, context } = this;
    const uploaded: string[] = [];
    for (const path of spec.outputs) {
      const source = join(this.runDir, path);
      const info = await stat(source).catch(() => null);
      if (!info?.isFile()) continue;
      const response = await fetch(
        context.serverUrl() + agentFileRoutes.output(spec.jobId, spec.taskIndex, spec.attempt, path),
        {
          method: "PUT",
          headers: {
            authorization: `Bearer ${context.joinToken}`,
            "content-type": "application/octet-stream",
          },
          body: await openAsBlob(source),
        },
      );
      if (!response.ok)
        throw new Error(`PUT output ${path}: HTTP ${response.status} ${await response.text()}`);
      uploaded.push(path);
    }
    return uploaded;
  }
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

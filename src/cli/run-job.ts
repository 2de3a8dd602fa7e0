// `steward run`: the job file its options make, the exit code its job's end gives, and the
// prefix an array's output lines get. Pure rules; commands/run.ts does the talking.

import { InvalidArgumentError } from "commander";

/** The exit code of a task that failed without one of its own (lost, cancelled, stopped by a signal). */
export const NO_EXIT_CODE = 1;

/** The exit code of `steward run` stopped by Ctrl-C (SIGINT), after it cancelled its job: 128 + 2, as a shell's. */
export const INTERRUPTED_EXIT = 130;

/** Tasks of an array whose output is followed at once; the others' wait their turn (their logs are kept). */
export const MAX_FOLLOWED_TASKS = 16;

export interface RunOptions {
  name?: string;
  cpus?: number;
  memoryMb?: number;
  gpus?: number;
  requirements?: string;
  rank?: string;
  array?: number;
  parallel?: number;
  input: string[];
  output: string[];
  /** The job's `workdir`: it runs in place in this folder of a shared filesystem. */
  workdir?: string;
  env: Record<string, string>;
  checkpointInterval?: number;
  retry?: number;
  timeLimit?: number;
  priority?: number;
  qos?: string;
  detach?: boolean;
}

/** The job file of `steward run OPTIONS -- COMMAND ARGS`: the command as argv (no shell), the options as its fields. */
export function runJobFile(command: readonly string[], options: RunOptions): Record<string, unknown> {
  const job: Record<string, unknown> = { command: [...command] };
  if (options.name !== undefined) job.name = options.name;
  const resources: Record<string, number> = {};
  if (options.cpus !== undefined) resources.cpus = options.cpus;
  if (options.memoryMb !== undefined) resources.memoryMb = options.memoryMb;
  if (options.gpus !== undefined) resources.gpus = options.gpus;
  if (Object.keys(resources).length > 0) job.resources = resources;
  if (options.requirements !== undefined) job.requirements = options.requirements;
  if (options.rank !== undefined) job.rank = options.rank;
  if (options.array !== undefined)
    job.array = {
      count: options.array,
      ...(options.parallel !== undefined ? { parallel: options.parallel } : {}),
    };
  else if (options.parallel !== undefined) job.array = { parallel: options.parallel };
  if (options.input.length > 0) job.inputs = [...options.input];
  if (options.output.length > 0) job.outputs = [...options.output];
  if (options.workdir !== undefined) job.workdir = options.workdir;
  if (Object.keys(options.env).length > 0) job.env = { ...options.env };
  if (options.checkpointInterval !== undefined)
    job.checkpoint = { intervalSeconds: options.checkpointInterval };
  if (options.retry !== undefined) job.retry = { maxAttempts: options.retry };
  if (options.timeLimit !== undefined) job.timeLimitSeconds = options.timeLimit;
  if (options.priority !== undefined) job.priority = options.priority;
  if (options.qos !== undefined) job.qos = options.qos;
  return job;
}

/** The job file's fields as `run`'s flags, for the server's 400 (`resources.cpus: ...` is `--cpus: ...`). */
export const FIELD_FLAGS: Readonly<Record<string, string>> = {
  name: "--name",
  command: "the command",
  "resources.cpus": "--cpus",
  "resources.memoryMb": "--memory-mb",
  "resources.gpus": "--gpus",
  requirements: "--requirements",
  rank: "--rank",
  array: "--array",
  "array.parallel": "--parallel",
  inputs: "--input",
  outputs: "--output",
  workdir: "--workdir",
  env: "--env",
  checkpoint: "--checkpoint-interval",
  retry: "--retry",
  timeLimitSeconds: "--time-limit",
  priority: "--priority",
  qos: "--qos",
};

/**
 * The server's message on the job file (`FIELD: why`) with the field named as the flag that set it:
 * the longest known prefix of the field (`inputs[1]` is `--input`, `env.A` is `--env`); a message
 * on no known field is returned as it is.
 */
export function flagMessage(message: string): string {
  const match = /^([\w.[\]]+): ([\s\S]*)$/.exec(message);
  if (!match) return message;
  const parts = match[1].replace(/\[\d+\]/g, "").split(".");
  for (let length = parts.length; length > 0; length--) {
    const flag = FIELD_FLAGS[parts.slice(0, length).join(".")];
    if (flag) return `${flag}: ${match[2]}`;
  }
  return message;
}

/** `--env K=V` (repeatable): a variable of the job. */
export function envVariable(value: string, previous: Record<string, string> = {}): Record<string, string> {
  const match = /^([A-Za-z_][A-Za-z0-9_]*)=([\s\S]*)$/.exec(value);
  if (!match)
    throw new InvalidArgumentError(
      `--env needs NAME=VALUE (a variable name, letters, digits, _), not ${value}`,
    );
  return { ...previous, [match[1]]: match[2] };
}

/** A repeatable flag's values, in order. */
export function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

/** A whole number as given (negative too: --priority); whether it is in range is the server's to say, as at submit. */
export function wholeNumber(flag: string) {
  return (value: string): number => {
    const parsed = value.trim() === "" ? Number.NaN : Number(value);
    if (!Number.isInteger(parsed))
      throw new InvalidArgumentError(`${flag} needs a whole number, not ${value}`);
    return parsed;
  };
}

/** A number of seconds or megabytes as given (the server checks its range). */
export function anyNumber(flag: string) {
  return (value: string): number => {
    const parsed = value.trim() === "" ? Number.NaN : Number(value);
    if (!Number.isFinite(parsed)) throw new InvalidArgumentError(`${flag} needs a number, not ${value}`);
    return parsed;
  };
}

/** What the exit code needs of a task: its state and its attempts' exit codes. */
export interface EndedTask {
  state: string;
  attempts: readonly { number: number; exitCode: number | null }[];
}

/**
 * A task's exit code for `run`: 0 when it succeeded; else the exit code of its latest attempt that
 * exited non-zero (a retried task's last failure); else NO_EXIT_CODE (lost, cancelled, killed by a
 * signal, timed out, or a zero exit the job failed all the same).
 */
export function taskExitCode(task: EndedTask): number {
  if (task.state === "succeeded") return 0;
  const exited = task.attempts
    .filter((attempt) => attempt.exitCode !== null && attempt.exitCode !== 0)
    .sort((a, b) => b.number - a.number);
  return exited[0]?.exitCode ?? NO_EXIT_CODE;
}

/**
 * The index of the task an array's exit code comes from: the first (lowest index) that did not
 * succeed, from `task-states`' letters; null when every task succeeded (exit 0).
 */
export function firstUnsucceeded(states: string, succeeded: string): number | null {
  for (let index = 0; index < states.length; index++) if (states[index] !== succeeded) return index;
  return null;
}

/**
 * Cuts a stream's bytes into lines and writes each with `prefix` (an array task's `3: `, as
 * `srun --label` does). A line is written whole once its newline comes; the rest at `end`, with a
 * newline added.
 */
export class LinePrefixer {
  readonly #prefix: string;
  readonly #write: (text: string) => void;
  #partial = "";
  readonly #decoder = new TextDecoder();

  constructor(prefix: string, write: (text: string) => void) {
    this.#prefix = prefix;
    this.#write = write;
  }

  push(chunk: Uint8Array): void {
    const text = this.#partial + this.#decoder.decode(chunk, { stream: true });
    const last = text.lastIndexOf("\n");
    if (last < 0) {
      this.#partial = text;
      return;
    }
    this.#partial = text.slice(last + 1);
    const lines = text.slice(0, last).split("\n");
    this.#write(lines.map((line) => `${this.#prefix}${line}\n`).join(""));
  }

  end(): void {
    const rest = this.#partial + this.#decoder.decode();
    this.#partial = "";
    if (rest.length > 0) this.#write(`${this.#prefix}${rest}\n`);
  }
}

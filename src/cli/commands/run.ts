// steward run [OPTIONS] -- COMMAND [ARGS...]: a job from the command line (srun, `hq submit -- cmd`).
// It submits the job the options make, then follows each task's attempts' stdout and stderr as
// they come, and exits with the job's exit code (run-job.ts); Ctrl-C cancels the job.

import { randomUUID } from "node:crypto";
import { resolve } from "node:path";
import type { Command } from "commander";
import type { Job, Task } from "../../common/api/jobs.ts";
import { CliError } from "../../common/command-line/cli-error.ts";
import { describe } from "../../common/command-line/commands.ts";
import { ApiClient } from "../client.ts";
import { inputFiles, submissionBody } from "../job-submission.ts";
import { OutputFiles, type OutputPaths, outputFilesConflict } from "../output-files.ts";
import {
  anyNumber,
  collect,
  envVariable,
  firstUnsucceeded,
  flagMessage,
  INTERRUPTED_EXIT,
  LinePrefixer,
  MAX_FOLLOWED_TASKS,
  type RunOptions,
  runJobFile,
  taskExitCode,
  wholeNumber,
} from "../run-job.ts";
import { followTask } from "../task-follower.ts";
import { fetchedLine, fetchOutputs } from "./fetch.ts";

const HELP = `
The command and its arguments are run as they are, without a shell (give one for pipes and
variables: -- sh -c '...'). Put -- before the command when it has options of its own.

Without --detach, run waits for the job: each task's stdout and stderr come to this terminal's as
they are written (every attempt's, a retried task's again), an array's lines prefixed by the task
index ("3: ..."), a multi-node job's rank 0's. It then writes the job's --output files here, as
steward fetch does (an array's under <task>/), and exits with the job's exit code:
  0                  the job succeeded (an array: every task)
  the task's code    its latest non-zero exit (an array: the lowest-index task that did not succeed)
  1                  failed without an exit code of its own (lost, cancelled, killed, timed out)
  130                Ctrl-C: the job is cancelled (pending tasks never start, running ones stop)
  2                  the options make an invalid job (the server's message names the flag)
--input files are uploaded from the current folder (relative paths inside it), as a job file's
inputs.

--stdout FILE and --stderr FILE write the job's stdout and stderr, as they come to this terminal
(every attempt's, an array's lines prefixed), to FILE here as well: a log file per job, as workflow
engines expect. Each FILE is made or emptied before the job is submitted (one that cannot be
written is refused, exit 2, and no job is made); the same FILE for both gets them interleaved as
they come. They are written by run as it follows the job, so not with --detach (once a detached
job has ended, steward logs ID > FILE writes the same).

--detach prints the job id alone on its line and exits 0, as Slurm's sbatch --parsable does:
id=$(steward run --detach ...) in a script, or a workflow engine's submit command (steward
status, logs, wait, cancel and fetch then).

Examples:
  steward run -- hostname
  steward run --cpus 4 --memory-mb 2048 -- ./simulate --steps 100
  steward run --array 10 -- sh -c 'echo task $STEWARD_TASK_INDEX'
  steward run --array 100 --parallel 8 -- ./case.sh
  steward run --input data.csv --output result.txt -- sh -c 'sort data.csv > result.txt'
  steward run --workdir /data/cfd/run-12 -- ./ns3d input
  steward run --requirements 'host.arch == "x86_64"' --gpus 1 --retry 3 -- python train.py
  id=$(steward run --detach --time-limit 3600 -- ./long-job)
  steward run --stdout job.out --stderr job.err -- ./simulate`;

/** The options as commander gives them: a repeatable option not given is absent. */
type RunFlags = Omit<RunOptions, "input" | "output" | "env"> &
  Partial<Pick<RunOptions, "input" | "output" | "env">> &
  OutputPaths;

export function registerRun(program: Command): void {
  program
    .command("run")
    .description(describe("run"))
    .usage("[options] -- <command> [args...]")
    .argument("<command...>", "the command and its arguments (argv, no shell)")
    .option("--name <name>", "the job's name (default: the command's)")
    .option("--cpus <c>", "slots (cpus) one task takes", wholeNumber("--cpus"))
    .option("--memory-mb <m>", "memory one task needs, MB", anyNumber("--memory-mb"))
    .option("--gpus <n>", "GPUs one task takes (of its host agent's --gpus)", wholeNumber("--gpus"))
    .option("--requirements <expr>", "CEL over host facts a host must satisfy")
    .option("--rank <expr>", "CEL over host facts: among the matching hosts, higher first")
    .option("--array <n>", "run the command as N tasks (STEWARD_TASK_INDEX 0..N-1)", wholeNumber("--array"))
    .option(
      "--parallel <m>",
      "with --array: at most M tasks run at once (steward update --parallel changes it)",
      wholeNumber("--parallel"),
    )
    .option("--input <file>", "a file of the current folder to upload (repeatable)", collect)
    .option("--output <path>", "a file to collect, written here at the end (repeatable)", collect)
    .option(
      "--workdir <path>",
      "run in place in this folder of a shared filesystem (a relative one from the current folder; in a folder the hosts share: their agents' --shared); nothing uploaded or collected",
    )
    .option("--env <name=value>", "a variable of the job's environment (repeatable)", envVariable)
    .option(
      "--checkpoint-interval <s>",
      "seconds between uploads of $STEWARD_CHECKPOINT_DIR",
      anyNumber("--checkpoint-interval"),
    )
    .option("--retry <n>", "attempts a failing task may make (retry.maxAttempts)", wholeNumber("--retry"))
    .option("--time-limit <s>", "seconds an attempt may run before it is stopped", anyNumber("--time-limit"))
    .option("--priority <n>", "higher first among the owner's jobs", wholeNumber("--priority"))
    .option("--qos <tier>", "the job's QoS tier (default normal): one the token may use")
    .option("--stdout <file>", "write the job's stdout to FILE too, as it comes (not with --detach)")
    .option("--stderr <file>", "write the job's stderr to FILE too, as it comes (not with --detach)")
    .option("--detach", "print the job id alone and exit 0 instead of waiting (as sbatch --parsable)")
    .addHelpText("after", HELP)
    .action(async (command: string[], flags: RunFlags) => {
      const options: RunOptions = {
        ...flags,
        input: flags.input ?? [],
        output: flags.output ?? [],
        env: flags.env ?? {},
        // A folder named from here, as sbatch --chdir takes it: the hosts share it at the same path.
        ...(flags.workdir !== undefined ? { workdir: resolve(flags.workdir) } : {}),
      };
      if (options.parallel !== undefined && options.array === undefined)
        throw new CliError("--parallel needs --array N: it limits the tasks of an array", 2);
      const paths: OutputPaths = { stdout: flags.stdout, stderr: flags.stderr };
      const conflict = outputFilesConflict(paths, options.detach === true);
      if (conflict) throw new CliError(conflict, 2);
      const files = OutputFiles.open(paths);
      try {
        const client = new ApiClient();
        const id = await submitRun(client, command, options);
        if (options.detach) {
          process.stdout.write(`${id}\n`);
          return;
        }
        if (process.stderr.isTTY) process.stderr.write(`steward: job ${id} submitted (Ctrl-C cancels it)\n`);
        process.exitCode = await attend(client, id, options.output.length > 0, files);
      } finally {
        files.close();
      }
    });
}

/** Submits the job the options make (its inputs uploaded from the current folder); its id. */
async function submitRun(client: ApiClient, command: string[], options: RunOptions): Promise<string> {
  const raw = runJobFile(command, options);
  const folder = process.cwd();
  let inputs: string[];
  try {
    inputs = inputFiles(raw.inputs, folder);
  } catch (error) {
    throw new CliError(flagMessage((error as Error).message), 2);
  }
  try {
    const body = await submissionBody({ raw, inputs, folder });
    const job = await client.json<Job>("POST", "/api/v1/jobs", {
      ...body,
      // As submit: a request sent again after a lost answer finds the job the first one made.
      headers: { ...body.headers, "idempotency-key": randomUUID() },
      idempotent: true,
    });
    return job.id;
  } catch (error) {
    if (error instanceof CliError && error.status === 400) throw new CliError(flagMessage(error.message), 2);
    throw error;
  }
}

/**
 * Follows the job to its end: its tasks' output streamed, Ctrl-C cancelling it; then its outputs
 * fetched (when asked for) and its exit code.
 */
async function attend(client: ApiClient, id: string, fetch: boolean, files: OutputFiles): Promise<number> {
  let interrupted = false;
  const onInterrupt = () => {
    // A second Ctrl-C does not wait for the cancel's answer.
    if (interrupted) process.exit(INTERRUPTED_EXIT);
    interrupted = true;
    process.stderr.write(`\nsteward: cancelling job ${id}\n`);
    client
      .json<Job>("POST", `/api/v1/jobs/${encodeURIComponent(id)}/cancel`, { json: {}, idempotent: true })
      .then(
        () =>
          process.stderr.write(
            `steward: job ${id} cancelled: pending tasks never start, running ones are stopped\n`,
          ),
        (error: Error) => process.stderr.write(`steward: could not cancel job ${id}: ${error.message}\n`),
      )
      .finally(() => process.exit(INTERRUPTED_EXIT));
  };
  process.on("SIGINT", onInterrupt);
  const job = await client.json<Job>("GET", `/api/v1/jobs/${encodeURIComponent(id)}`, {
    query: { tasks: 0, events: 0 },
  });
  const labelled = job.taskCount > 1;
  let next = 0;
  const follower = async () => {
    while (next < job.taskCount) {
      const index = next++;
      await followOutput(client, id, index, labelled, files);
    }
  };
  await Promise.all(Array.from({ length: Math.min(MAX_FOLLOWED_TASKS, job.taskCount) }, follower));
  const code = await exitCode(client, id, job.taskCount);
  if (fetch) {
    const { written, bytes, root } = await fetchOutputs(client, id, ".");
    process.stderr.write(`steward: ${fetchedLine(written.length, bytes)} under ${root}\n`);
  }
  process.off("SIGINT", onInterrupt);
  return code;
}

/**
 * One task's attempts in turn, from its first, each's stdout and stderr to ours (an array's lines
 * labelled), and to the files of --stdout and --stderr.
 */
async function followOutput(
  client: ApiClient,
  id: string,
  index: number,
  labelled: boolean,
  files: OutputFiles,
): Promise<void> {
  const write = (stream: "stdout" | "stderr", text: Uint8Array | string) => {
    process[stream].write(text);
    files.write(stream, text);
  };
  const lines = {
    stdout: labelled ? new LinePrefixer(`${index}: `, (text) => write("stdout", text)) : null,
    stderr: labelled ? new LinePrefixer(`${index}: `, (text) => write("stderr", text)) : null,
  };
  await followTask(client, id, index, {
    streams: ["stdout", "stderr"],
    from: 1,
    onChunk: (stream, chunk) => {
      const prefixer = lines[stream];
      if (prefixer) prefixer.push(chunk);
      else write(stream, chunk);
    },
    onStreamEnd: (stream) => lines[stream]?.end(),
  });
}

/** The job's exit code (run-job.ts): a single task's, or an array's first task that did not succeed. */
async function exitCode(client: ApiClient, id: string, tasks: number): Promise<number> {
  let index: number | null = 0;
  if (tasks > 1) {
    const { states, legend } = await client.json<{ states: string; legend: Record<string, string> }>(
      "GET",
      `/api/v1/jobs/${encodeURIComponent(id)}/task-states`,
    );
    index = firstUnsucceeded(states, legend.succeeded);
  }
  if (index === null) return 0;
  const task = await client.json<Task>("GET", `/api/v1/jobs/${encodeURIComponent(id)}/tasks/${index}`);
  return taskExitCode(task);
}

// The job file (README "A job file"): strict at every level, defaults filled in, CEL type-checked.
// Every error names the field it is about; a job that fails here creates nothing.

import { z } from "zod";
import {
  countProblem,
  paramsFileLines,
  paramsProblem,
  placeholderProblem,
  type TaskParam,
} from "./array-params.ts";
import { expressionProblem } from "./cel.ts";
import { containerImageProblem, containerSchema } from "./container-spec.ts";
import { DEPENDENCY_CONDITIONS } from "./dependencies.ts";
import { firstProblem } from "./first-problem.ts";
import { inputNameClash, urlInputSchema } from "./input-spec.ts";
import { JOB_FILE_KEY_ALIASES } from "./job-file-key-aliases.ts";
import { JobFileError } from "./jobfile-error.ts";
import { urlOutputSchema, urlOutputsProblem } from "./output-spec.ts";
import { DEFAULT_QOS, QOS_NAME } from "./qos-name.ts";
import { relativePathProblem } from "./relative-path.ts";
import { absoluteFolderProblem } from "./shared-folders.ts";

/** The most replicas a job may ask for (the issue's bound; MyGrid's default is far lower). */
export const MAX_REPLICAS = 8;

/** Processes (and threads) one attempt may have at once when its job file names no number. */
export const DEFAULT_MAX_PROCESSES = 4096;

/** Tasks an array may have. */
export const MAX_ARRAY_TASKS = 1_000_000;

/** Ranks a multi-node job may ask for. */
export const MAX_NODES = 1024;

/** Ranks of a job: `nodes`, 1 for a single-host job. */
export function nodesOf(spec: { nodes?: number }): number {
  return spec.nodes ?? 1;
}

/** An array as the job file gives it (`array: N` becomes `{count: N}`). */
interface ArraySpec {
  count?: number;
  parallel?: number;
  params?: (string | Record<string, string | number | boolean>)[];
  paramsFile?: string;
}

const relativePath = z.string().superRefine((path, context) => {
  const problem = relativePathProblem(path);
  if (problem) context.addIssue({ code: "custom", message: `${JSON.stringify(path)} ${problem}` });
});

const absoluteFolder = z.string().superRefine((path, context) => {
  const problem = absoluteFolderProblem(path);
  if (problem) context.addIssue({ code: "custom", message: `${JSON.stringify(path)} ${problem}` });
});

const celSource = (purpose: "requirements" | "rank") =>
  z.string().superRefine((source, context) => {
    // Evaluated on every host at every scheduling pass: one that would hold the broker is refused
    // (`estimated cost N steps is over the limit of M`, which needs no "CEL:" before it).
    const problem = expressionProblem(source, purpose);
    if (problem) {
      const message = problem.kind === "cel" ? `CEL: ${problem.message}` : problem.message;
      context.addIssue({ code: "custom", message });
    }
  });

/** A key's meaning and an example, for docs/job-file.md (`npm run docs`) and the OpenAPI document. */
function about<T extends z.ZodType>(schema: T, description: string, example: unknown): T {
  return schema.meta({ description, examples: [example] });
}

/** A command's words and variables' values reach exec(2) as C strings: no NUL byte in them. */
const withoutNul = z.string().regex(/^[^\0]*$/, "must not contain a NUL byte");

export const jobSpecSchema = z.strictObject({
  name: about(
    z.string().min(1).max(200).optional(),
    "A name for the job, shown by `ps` and the dashboard.",
    "cfd",
  ),
  command: about(
    z.union([withoutNul.min(1), z.array(withoutNul).min(1)]),
    "What to run, in the job's working folder: a list is executed as it is (no shell); a string runs through `/bin/sh -c` (a string of plain words that names a program, with no shell syntax and no builtin such as `cd` or `echo`, runs as those words without starting a shell, as GNU make does: the same program, arguments and environment; only a missing program's message differs, the exit code is 127 either way).",
    ["./ns3d", "input"],
  ),
  inputs: about(
    z.array(z.union([relativePath, urlInputSchema])).default([]),
    "Files placed in the job's working folder before it starts. A path: a file relative to the job file's folder (the current folder for `steward submit -`), uploaded at submit; it may not leave its folder. A mapping `{url, sha256, as}`: a file the agent fetches itself from an `http:` or `https:` URL, or an `s3://bucket/key` object. Either way each host keeps it in its content cache, so an array's tasks on one host fetch it once.",
    ["ns3d", "input", { url: "https://data.example.org/runs/grid.nc", as: "grid.nc" }],
  ),
  outputs: about(
    z.array(z.union([relativePath, urlOutputSchema])).default([]),
    "Files taken from the job's working folder when it succeeds. A path: collected by the server (`steward fetch`). A mapping `{path, to}`: pushed by the agent itself to `to`, an `s3://bucket/key` object or an `http:`/`https:` URL (a PUT), not through the server. A file missing fails the attempt either way.",
    ["residual", { path: "summary.csv", to: "s3://results/cfd/summary.csv" }],
  ),
  workdir: about(
    absoluteFolder.optional(),
    "Runs the job in place (docs/data.md): its working folder is this absolute path, in a folder hosts share (an agent's `--shared`), and only hosts sharing a folder that holds it run the job. The job reads and writes its files there: nothing is uploaded at submit or collected after, so `inputs`, `outputs` and `array.paramsFile` do not go with it, nor `replicas` (they would write in the one folder at once). Refused at submit when hosts share folders and none holds it; waits while no host shares any. On an agent that runs jobs as their accounts, the job's account enters it (never root): one that may not fails the attempt naming the folder. Absent: a new folder of the attempt's, the inputs put in it.",
    "/data/cfd/run-12",
  ),
  container: about(
    containerSchema.optional(),
    "Runs the command inside a container image with an OCI runtime (`runc`) on the host (docs/containers.md): only hosts whose agent found one (the host fact `containers`) take the job. Its working folder, `$STEWARD_CHECKPOINT_DIR`, the `STEWARD_*` variables and its limits are as outside.",
    { image: "oci-archive:tools.tar", network: "none" },
  ),
  env: about(
    z
      .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "not a valid variable name"), withoutNul)
      .default({}),
    "Environment variables of the job, besides the `STEWARD_*` ones. Never on a command line.",
    { OMP_NUM_THREADS: "4" },
  ),
  resources: about(
    z
      .strictObject({
        cpus: about(z.int().min(1).default(1), "Slots (cpus) one task takes on its host.", 4),
        memoryMb: about(
          z.number().min(0).default(0),
          "Memory one task needs, in MB: a host with less free is not chosen (0: no need).",
          2048,
        ),
        gpus: about(
          z.int().min(0).max(1024).optional(),
          "GPUs one task (one rank) takes: devices of its host's agent (`--gpus`) that no other live attempt holds, given in `CUDA_VISIBLE_DEVICES` and `STEWARD_GPUS`.",
          1,
        ),
        custom: about(
          z
            .record(
              z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,63}$/, "not a resource name (letters, digits, _)"),
              z.int().min(1),
            )
            .optional(),
          "Units of countable resources one task (one rank) takes, by name, counted against what its host's agent declares (`--resource license=4`); given in `STEWARD_RESOURCE_<NAME>`.",
          { license: 2 },
        ),
        maxProcesses: about(
          z.int().min(1).max(4_194_304).optional(),
          `Processes and threads one task (one rank) may have at once, on an agent that enforces limits (its cgroup's pids limit): a fork beyond it fails. Absent: ${DEFAULT_MAX_PROCESSES}.`,
          256,
        ),
      })
      .default({ cpus: 1, memoryMb: 0 }),
    "What one task (or one rank of a multi-node job) takes of a host.",
    { cpus: 4, memoryMb: 2048 },
  ),
  requirements: about(
    celSource("requirements").optional(),
    "A CEL expression over host facts (`host.arch`, `host.memFreeMb`, `host.labels`, ...) a host must make true to run the job. Checked at submit: it must compile, name known facts and cost little enough.",
    'host.arch == "x86_64" && host.memFreeMb >= 512.0',
  ),
  rank: about(
    celSource("rank").optional(),
    "A CEL expression over host facts: among the hosts that match, higher first.",
    "host.speed * host.cpuFree",
  ),
  priority: about(
    z.int().default(0),
    "Orders the owner's own jobs: higher first among them, then submit order. It never puts a job before, or lets it preempt, another user's job: between users, the QoS tier's priority orders, then fair share, then submit order.",
    5,
  ),
  qos: about(
    z
      .string()
      .regex(QOS_NAME, "must be a QoS tier name (lower-case letters, digits, - or _)")
      .default(DEFAULT_QOS),
    "The QoS tier the job runs in (the server's `--qos` file): its priority between users, whom it may preempt, and the limits per user of the tier. The submitter's token must allow it.",
    "high",
  ),
  timeLimitSeconds: about(
    z.number().positive().optional(),
    "An attempt running longer is stopped (SIGTERM, `checkpoint.graceSeconds`, SIGKILL) and ends `timed_out`. Also how long a task is expected to run, for pilots' walltimes.",
    3600,
  ),
  retry: about(
    z
      .strictObject({
        maxAttempts: about(
          z.int().min(1).default(1),
          "Attempts a task may make when the job fails (exits non-zero); lost, preempted and migrated attempts do not count.",
          3,
        ),
        backoffSeconds: about(
          z.number().min(0).default(5),
          "Wait before the first retry, doubled on each later one (up to a cap).",
          5,
        ),
        memoryGrowth: about(
          z.number().gt(1).max(16).optional(),
          "After an attempt is killed for its memory limit, the task's `memoryMb` is multiplied by this for its next attempts (placement follows the new size). Absent: retries keep the job's size.",
          1.5,
        ),
        maxMemoryMb: about(
          z.number().positive().optional(),
          "With `memoryGrowth`: the most memory a retry grows to, in MB (absent: no cap).",
          8192,
        ),
      })
      .default({ maxAttempts: 1, backoffSeconds: 5 }),
    "Retries of a task whose job fails.",
    { maxAttempts: 3, backoffSeconds: 5, memoryGrowth: 2, maxMemoryMb: 8192 },
  ),
  checkpoint: about(
    z
      .strictObject({
        intervalSeconds: about(
          z.number().positive().default(60),
          "How often the agent uploads the files of `$STEWARD_CHECKPOINT_DIR` that changed.",
          60,
        ),
        graceSeconds: about(
          z.number().min(0).default(30),
          "Between SIGTERM and SIGKILL when an attempt is stopped (migrate, hold, preempt, time limit), for the job to save its state.",
          30,
        ),
      })
      .default({ intervalSeconds: 60, graceSeconds: 30 }),
    "Checkpoints: the last one is given back to the next attempt, on any host, with `STEWARD_RESTARTED=1`.",
    { intervalSeconds: 120, graceSeconds: 30 },
  ),
  array: about(
    z
      .union([
        z
          .int()
          .min(1)
          .max(MAX_ARRAY_TASKS)
          .transform((count): ArraySpec => ({ count }))
          .meta({ description: "`array: N` is `array: {count: N}`." }),
        z.strictObject({
          count: about(
            z.int().min(1).max(MAX_ARRAY_TASKS).optional(),
            "Tasks of the array: 0..count-1, each sees its index in `STEWARD_TASK_INDEX`. With `params` or `paramsFile` it may be left out (one task per parameter); given, it must agree.",
            100,
          ),
          parallel: about(
            z.int().min(1).max(MAX_ARRAY_TASKS).optional(),
            "At most this many tasks of the array run at once (a task holding a slot counts: starting, running or stopping); absent: no limit. `steward update ID --parallel M` changes it, also while tasks run.",
            10,
          ),
          params: about(
            z
              .array(
                z.union([z.string(), z.record(z.string(), z.union([z.string(), z.number(), z.boolean()]))]),
              )
              .min(1)
              .max(MAX_ARRAY_TASKS)
              .optional(),
            // biome-ignore lint/suspicious/noTemplateCurlyInString: the job file's placeholder, as users write it
            'One parameter per task, task i the i-th: a string, or a mapping of keys (letters, digits, `_`, `-`) to strings, numbers or booleans. A task sees it in `STEWARD_TASK_PARAM` (a mapping as JSON) and `STEWARD_PARAM_<KEY>`: a string command reads it best as `"$STEWARD_TASK_PARAM"`, or as `${param:q}` (`${param.KEY:q}`), put in as one shell-quoted word. `${param}` and `${param.KEY}` in `command` and `env` values are replaced by its text as it is: safe in a list command (no shell), not in a string one, where the shell parses it (`$${param}` stays `${param}`). The job file is at most 1 MiB: a long list goes in `paramsFile`.',
            ["a.dat", "b.dat"],
          ),
          paramsFile: about(
            relativePath.optional(),
            "An input file (listed in `inputs`) with one parameter per line, task i the line i+1: read by the server at submit, as `params` of strings. Empty lines are refused; a last line break makes no task. At most 64 MiB and 1,000,000 lines (each at most 32768 characters): a larger file is refused naming the limit.",
            "cases.txt",
          ),
        }),
      ])
      .optional(),
    "A job array: the command runs once per task. `array: N` is `array: {count: N}`.",
    { count: 100, parallel: 10 },
  ),
  replicas: about(
    z.int().min(1).max(MAX_REPLICAS).default(1),
    "Up to this many attempts of a running task at once, each on a host of its own, when slots are idle with nothing pending to start; the first to succeed wins, the others are cancelled.",
    2,
  ),
  dependsOn: about(
    z
      .array(
        z.union([
          z.string().min(1),
          z.strictObject({
            job: about(z.string().min(1), "The id of the job waited for.", "12"),
            when: about(
              z.enum(DEPENDENCY_CONDITIONS).optional(),
              "What it must do first: `succeeded` (absent), `ended` (whatever its state: a cleanup), `failed` (run only after it failed).",
              "ended",
            ),
            tasks: about(
              z.literal("same").optional(),
              "`same`: task i waits for task i of that job only (both arrays of the same count), not for the whole job.",
              "same",
            ),
          }),
        ]),
      )
      .default([]),
    "Jobs this one waits for: an id waits for that job to succeed; `{job, when, tasks}` for it to end or to fail, task by task with `tasks: same`. A dependency that can no longer be met (a job that failed when this waited for it to succeed, or succeeded when this waited for it to fail) ends this job's waiting tasks `cancelled`, naming it.",
    ["12", { job: "13", when: "ended" }],
  ),
  nodes: about(
    z.int().min(1).max(MAX_NODES).optional(),
    "A multi-node job: one task whose attempt is a gang of this many ranks, started together on as many hosts (absent: 1). Not with `array` or `replicas`.",
    4,
  ),
  nodesPerHost: about(
    z.int().min(1).max(MAX_NODES).optional(),
    "Multi-node: ranks one host may run (absent: 1, one rank per host), consecutive ranks sharing a host.",
    2,
  ),
  restartPool: about(
    z.string().min(1).optional(),
    "Multi-node: the pool a failed rank's replacement comes from (absent: the server's `--restart-pool`).",
    "spares",
  ),
  outputsFrom: about(
    z.enum(["rank0", "all"]).optional(),
    "Multi-node: collect outputs from rank 0 (absent: `rank0`), or from every rank under `rank-N/` (`all`).",
    "all",
  ),
  maxQueueWaitSeconds: about(
    z.int().min(1).optional(),
    "Leave a batch pool whose queue holds a pilot for this job longer than this (when shorter than the pool's own).",
    300,
  ),
  contract: about(
    z
      .strictObject({
        minProgressPerMinute: about(
          z.number().positive(),
          "The least progress per minute, as a fraction of the job (from `$STEWARD_PROGRESS_FILE`).",
          0.05,
        ),
        graceSeconds: about(
          z.number().min(0),
          "How long progress may stay below the rate (and the least an attempt runs) before it moves.",
          60,
        ),
      })
      .optional(),
    "A performance contract: an attempt progressing slower than promised is stopped with its checkpoint and restarts on another host, which then ranks last for the job.",
    { minProgressPerMinute: 0.05, graceSeconds: 60 },
  ),
});

export type JobSpec = z.output<typeof jobSpecSchema>;

/** Validates a parsed job file. Throws JobFileError naming the first bad field. */
export function validateJobSpec(input: unknown): JobSpec {
  if (input === null || typeof input !== "object" || Array.isArray(input)) {
    throw new JobFileError("", "a job file must be a mapping of fields");
  }
  const result = jobSpecSchema.safeParse(input);
  if (result.success) {
    const spec = result.data;
    if ((spec.nodes ?? 1) > 1) {
      if (spec.array) fail("nodes", "a multi-node job is one gang: it may not be combined with array");
      if (spec.replicas > 1) fail("nodes", "a multi-node job may not be combined with replicas");
    }
    if (spec.workdir !== undefined) checkInPlace(spec);
    const image = spec.container ? containerImageProblem(spec.container.image, spec.inputs) : null;
    if (image) fail("container.image", image);
    const clash = inputNameClash(spec.inputs);
    if (clash) fail(clash.field, clash.message);
    const pushed = urlOutputsProblem(spec);
    if (pushed) fail(pushed.field, pushed.message);
    checkArray(spec);
    return spec;
  }
  const { path, message } = firstProblem(result.error, {
    input,
    schema: jobSpecSchema,
    aliases: JOB_FILE_KEY_ALIASES,
  });
  throw new JobFileError(path, message);
}

/**
 * An array's count, parameters and parameters file agree (the count is set from the parameters
 * when left out), its parameters fit its command and env (array-params.ts), and its parameters
 * file is one of its inputs (the server reads it at submit: resolveParamsFile).
 */
function checkArray(spec: JobSpec): void {
  const array = spec.array;
  if (!array) return;
  const { params, paramsFile } = array;
  if (params && paramsFile !== undefined) fail("array.paramsFile", "give params or paramsFile, not both");
  if (params || paramsFile !== undefined) checkPlaceholders(spec);
  if (params) {
    const problem = countProblem(array.count, params.length, "array.params");
    if (problem) fail("array.count", problem);
    array.count = params.length;
    const wrong = paramsProblem(params, spec);
    if (wrong) {
      const key = wrong.key === undefined ? "" : `.${wrong.key}`;
      fail(`array.params[${wrong.index}]${key}`, wrong.message);
    }
  } else if (paramsFile !== undefined) {
    if (!spec.inputs.includes(paramsFile))
      fail(
        "array.paramsFile",
        `${paramsFile} is not one of the job's inputs: list it in inputs (they are uploaded at submit)`,
      );
  } else if (array.count === undefined) fail("array", "give count, params or paramsFile");
}

/**
 * A job run in place (`workdir`) moves no file through the server: it lists no inputs or outputs
 * (its files are where it runs) and no parameters file (read from its inputs); and it has no
 * replicas, which would write in the one folder at once.
 */
function checkInPlace(spec: JobSpec): void {
  if (spec.array?.paramsFile !== undefined)
    fail(
      "array.paramsFile",
      "a job with workdir uploads no file: give the parameters as array.params, or drop workdir",
    );
  if (spec.inputs.length > 0)
    fail(
      "inputs",
      "a job with workdir runs in place and uploads nothing: it reads its files where they are (drop inputs, or drop workdir)",
    );
  if (spec.outputs.length > 0)
    fail(
      "outputs",
      "a job with workdir runs in place and collects nothing: its files stay in its folder (drop outputs, or drop workdir)",
    );
  if (spec.replicas > 1)
    fail(
      "replicas",
      "replicas of a job with workdir would write in its one folder at once: drop one or the other",
    );
}

/** Each `${param...}` of the command and the env values has a known modifier (`:q`) or none. */
function checkPlaceholders(spec: JobSpec): void {
  const texts: [string, string][] =
    typeof spec.command === "string"
      ? [["command", spec.command]]
      : spec.command.map((part, index) => [`command[${index}]`, part]);
  for (const [name, value] of Object.entries(spec.env)) texts.push([`env.${name}`, value]);
  for (const [index, output] of spec.outputs.entries())
    if (typeof output !== "string") texts.push([`outputs[${index}].to`, output.to]);
  for (const [field, text] of texts) {
    const problem = placeholderProblem(text);
    if (problem) fail(field, problem);
  }
}

/**
 * The job file with its parameters file read (its text, from the blob store at submit): the file's
 * lines become `array.params` and its count, and `paramsFile` goes (the file stays an input).
 * Throws JobFileError naming the field: a count that does not match the lines names both.
 */
export function resolveParamsFile(spec: JobSpec, text: string): JobSpec {
  const name = spec.array?.paramsFile;
  if (name === undefined) return spec;
  return resolveParamsLines(spec, paramsFileLines(text, name));
}

/** The same with the file's lines read already (params-file-reader.ts, as its bytes come). */
export function resolveParamsLines(spec: JobSpec, lines: string[]): JobSpec {
  const array = spec.array;
  if (array?.paramsFile === undefined) return spec;
  const name = array.paramsFile;
  const problem = countProblem(array.count, lines.length, `array.paramsFile ${name} (one per line)`);
  if (problem) fail("array.count", problem);
  const { paramsFile: _read, ...rest } = array;
  const resolved: JobSpec = { ...spec, array: { ...rest, count: lines.length, params: lines } };
  const wrong = paramsProblem(lines, resolved);
  if (wrong) fail("array.paramsFile", `${name} line ${wrong.index + 1}: ${wrong.message}`);
  return resolved;
}

/** Task i's parameter, or undefined when the job has none. */
export function taskParam(spec: JobSpec, taskIndex: number): TaskParam | undefined {
  return spec.array?.params?.[taskIndex];
}

/** At most this many of the array's tasks run at once; undefined: no limit. */
export function arrayParallel(spec: JobSpec): number | undefined {
  return spec.array?.parallel;
}

function fail(field: string, message: string): never {
  throw new JobFileError(field, message);
}

export function taskCount(spec: JobSpec): number {
  return spec.array?.count ?? spec.array?.params?.length ?? 1;
}

// The job file (README "A job file"): strict at every level, defaults filled in, CEL type-checked.
// Every error names the field it is about; a job that fails here creates nothing.

import { z } from "zod";
import { expressionProblem } from "./cel.ts";
import { JobFileError } from "./jobfile-error.ts";
import { relativePathProblem } from "./relative-path.ts";
import { MAX_REPLICAS } from "./replicas.ts";

export { relativePathProblem };

/** Ranks a multi-node job may ask for. */
export const MAX_NODES = 1024;

/** Ranks of a job: `nodes`, 1 for a single-host job. */
export function nodesOf(spec: { nodes?: number }): number {
  return spec.nodes ?? 1;
}

const relativePath = z.string().superRefine((path, context) => {
  const problem = relativePathProblem(path);
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

export const jobSpecSchema = z.strictObject({
  name: z.string().min(1).max(200).optional(),
  command: z.union([z.string().min(1), z.array(z.string()).min(1)]),
  inputs: z.array(relativePath).default([]),
  outputs: z.array(relativePath).default([]),
  env: z
    .record(z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/, "not a valid variable name"), z.string())
    .default({}),
  resources: z
    .strictObject({
      cpus: z.int().min(1).default(1),
      memoryMb: z.number().min(0).default(0),
    })
    .default({ cpus: 1, memoryMb: 0 }),
  requirements: celSource("requirements").optional(),
  rank: celSource("rank").optional(),
  priority: z.int().default(0),
  timeLimitSeconds: z.number().positive().optional(),
  retry: z
    .strictObject({
      maxAttempts: z.int().min(1).default(1),
      backoffSeconds: z.number().min(0).default(5),
    })
    .default({ maxAttempts: 1, backoffSeconds: 5 }),
  checkpoint: z
    .strictObject({
      intervalSeconds: z.number().positive().default(60),
      graceSeconds: z.number().min(0).default(30),
    })
    .default({ intervalSeconds: 60, graceSeconds: 30 }),
  array: z.strictObject({ count: z.int().min(1).max(1_000_000) }).optional(),
  replicas: z.int().min(1).max(MAX_REPLICAS).default(1),
  dependsOn: z.array(z.string().min(1)).default([]),
  /** A multi-node job: one task whose attempt is a gang of this many ranks, one host each (absent: 1). */
  nodes: z.int().min(1).max(MAX_NODES).optional(),
  /** Multi-node: ranks one host may run (absent: 1, one rank per host). */
  nodesPerHost: z.int().min(1).max(MAX_NODES).optional(),
  /** Multi-node: the pool a failed rank's replacement comes from (else the server's --restart-pool). */
  restartPool: z.string().min(1).optional(),
  /** Multi-node: collect outputs from rank 0 (default) or from every rank under rank-N/. */
  outputsFrom: z.enum(["rank0", "all"]).optional(),
  /** Leave a batch pool whose queue holds a pilot for this job longer than this (pools/pool-manager.ts). */
  maxQueueWaitSeconds: z.int().min(1).optional(),
  /** A performance contract: progress slower than this for graceSeconds moves the job (contracts.ts). */
  contract: z
    .strictObject({
      minProgressPerMinute: z.number().positive(),
      graceSeconds: z.number().min(0),
    })
    .optional(),
});

export type JobSpec = z.output<typeof jobSpecSchema>;

export { JobFileError } from "./jobfile-error.ts";

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
    return spec;
  }
  const { field, message } = firstProblem(result.error);
  return fail(field, message);
}

/**
 * The problem a zod error reports first, as a field path (`inputs[1]`, `resources.gpus`) and a
 * message. An unknown key says most about a mistake, even when a required key beside it is missing.
 */
export function firstProblem(error: z.ZodError): { field: string; message: string } {
  const issue = error.issues.find((candidate) => candidate.code === "unrecognized_keys") ?? error.issues[0];
  const path = issue.path.map(String);
  if (issue.code === "unrecognized_keys")
    return { field: formatPath([...path, issue.keys[0]]), message: "unknown key" };
  return { field: formatPath(path), message: issue.message };
}

function fail(field: string, message: string): never {
  throw new JobFileError(field, message);
}

function formatPath(path: string[]): string {
  return path.reduce(
    (out, part) => (/^\d+$/.test(part) ? `${out}[${part}]` : out ? `${out}.${part}` : part),
    "",
  );
}

/** Parses YAML or JSON text (JSON is YAML). */
export { parseJobFileText } from "./jobfile-text.ts";

export function taskCount(spec: JobSpec): number {
  return spec.array?.count ?? 1;
}

// The pools file (`steward server --pools FILE`, README "Pools behind a batch system"): pools of
// hosts that a batch system provides through pilot agents. Validated like job files: strict at every level,
// defaults filled in, and an error names the field (`pools[1].walltime: ...`); a server with a bad
// pools file does not start.

import { z } from "zod";
import { ASSUMED_MAX_SHARED_FOLDERS } from "./cel-cost.ts";
import { FileFieldError } from "./file-field-error.ts";
import { firstProblem } from "./first-problem.ts";
import { parseJobFileText } from "./jobfile-text.ts";
import { absoluteFolderProblem, normalFolder } from "./shared-folders.ts";

/** Batch systems a pool may be backed by (one driver each under src/broker/drivers/). */
export const POOL_DRIVERS = ["slurm"] as const;

const poolName = z
  .string()
  .regex(
    /^[a-z0-9][a-z0-9_-]{0,62}$/,
    "must be 1 to 63 lower-case letters, digits, - or _, not starting with - or _",
  );

export const poolSchema = z.strictObject({
  name: poolName,
  driver: z.enum(POOL_DRIVERS),
  /** Passed to sbatch -p; the cluster's default partition when absent. */
  partition: z.string().min(1).optional(),
  /** Pilots pending and running at most. */
  maxPilots: z.int().min(1).max(10_000).default(4),
  /** Pilots pending in the batch queue at most. */
  backlog: z.int().min(1).max(10_000).default(2),
  /** Cpus each pilot asks for: its agent's --slots. */
  slotsPerPilot: z.int().min(1).max(100_000).default(1),
  /** Seconds each pilot asks for (sbatch --time). */
  walltime: z.int().min(60).default(3600),
  /** A pilot with nothing to do exits after this. */
  idleSeconds: z.int().min(1).default(120),
  /** A pilot pending longer is cancelled; the pool's demand goes to other pools. */
  maxQueueWaitSeconds: z.int().min(1).default(300),
  /** More sbatch arguments, as given. */
  sbatchArgs: z.array(z.string()).default([]),
  /**
   * The local account the pilots run as (the broker submits, lists and cancels them as it): the
   * jobs on a pilot run as this account, so it must not be the broker's own (broker/pools/pilot-account.ts).
   */
  account: z
    .string()
    .regex(
      /^[a-z_][a-z0-9_.-]{0,31}$/i,
      "must be a local account name (letters, digits, _, . or -, not starting with a digit, . or -)",
    )
    .optional(),
  /** Lets the pilots run as the broker's own account: their jobs can read the broker's data folder. */
  allowBrokerAccount: z.boolean().default(false),
  /**
   * Where the pilots' token file, logs and work folders go (absolute; a file system the batch
   * nodes reach, writable by `account`). Default: ACCOUNT's home/.steward-pilots/POOL with
   * `account`, else DATA/pilots/POOL.
   */
  pilotDir: z
    .string()
    .regex(/^\/[^\0]*$/, "must be an absolute path")
    .optional(),
  /**
   * Folders the batch nodes share with the other hosts (absolute; mounted at the same place on every
   * node): each pilot's agent declares them (its `--shared`), so that jobs with a workdir in them
   * run there and make the pool start pilots.
   */
  shared: z
    .array(
      z
        .string()
        .superRefine((path, context) => {
          const problem = absoluteFolderProblem(path);
          if (problem) context.addIssue({ code: "custom", message: problem });
        })
        .transform(normalFolder),
    )
    .max(ASSUMED_MAX_SHARED_FOLDERS)
    .default([])
    .transform((folders) => [...new Set(folders)]),
});

export type PoolSpec = z.output<typeof poolSchema>;

const poolsFileSchema = z.strictObject({ pools: z.array(poolSchema).min(1) }).superRefine((file, context) => {
  const seen = new Set<string>();
  file.pools.forEach((pool, index) => {
    if (pool.name === "default") {
      context.addIssue({
        code: "custom",
        path: ["pools", index, "name"],
        message: '"default" is the pool of agents started by hand',
      });
    }
    if (seen.has(pool.name)) {
      context.addIssue({
        code: "custom",
        path: ["pools", index, "name"],
        message: `${pool.name} is named twice`,
      });
    }
    seen.add(pool.name);
    if (pool.backlog > pool.maxPilots) {
      context.addIssue({
        code: "custom",
        path: ["pools", index, "backlog"],
        message: "must not exceed maxPilots",
      });
    }
  });
});

export class PoolsFileError extends FileFieldError {
  override name = "PoolsFileError";
}

/** The pools of a pools file's text (YAML or JSON); throws PoolsFileError naming the first bad field. */
export function parsePoolsFile(text: string): PoolSpec[] {
  let input: unknown;
  try {
    input = parseJobFileText(text);
  } catch (error) {
    throw new PoolsFileError("", (error as Error).message);
  }
  if (input === null || typeof input !== "object" || Array.isArray(input)) {
    throw new PoolsFileError("", "a pools file must be a mapping with a `pools` list");
  }
  const result = poolsFileSchema.safeParse(input);
  if (result.success) return result.data.pools;
  const { field, message } = firstProblem(result.error);
  throw new PoolsFileError(field, message);
}

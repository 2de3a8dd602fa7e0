// Messages between server and agent over one WebSocket, JSON text frames, validated with zod on arrival.
// This file (with model/) is the only thing the server and the agent share.

import { z } from "zod";
import { checkpointPathIssues } from "../model/checkpoint-paths.ts";
import { secretValueSchema } from "../model/secret-value.ts";
import type { Speaker } from "./versions.ts";

export const PROTOCOL_VERSION = 1;

export const AGENT_CONNECT_PATH = "/api/v1/agent/connect";

/**
 * The sender's version and release when `message` is a hello (or a welcome) of another protocol
 * version than PROTOCOL_VERSION: read before the message's own schema, which only its version
 * knows. A message with no version at all is not one (it is malformed).
 */
export function ofAnotherVersion(message: unknown, type: "hello" | "welcome"): Speaker | null {
  if (typeof message !== "object" || message === null) return null;
  const fields = message as { type?: unknown; v?: unknown; release?: unknown };
  if (fields.type !== type || fields.v === PROTOCOL_VERSION) return null;
  if (typeof fields.v !== "number" && typeof fields.v !== "string") return null;
  return {
    version: String(fields.v).slice(0, 16),
    release: typeof fields.release === "string" ? fields.release.slice(0, 64) : undefined,
  };
}

/** Where in its work folder an agent keeps its host credential (made before its first hello). */
export const HOST_CREDENTIAL_FILE = "host-credential";

export const hostFacts = z.object({
  name: z.string(),
  pool: z.string(),
  os: z.string(),
  arch: z.string(),
  cpus: z.number(),
  memoryMb: z.number(),
  memFreeMb: z.number(),
  load1: z.number(),
  cpuFree: z.number(),
  diskFreeMb: z.number(),
  /** Whether the agent's work folder is full: the host takes no new work (absent from older agents: not full). */
  diskFull: z.boolean().optional(),
  /** The free space (MiB) below which the agent's work folder counts as full. */
  diskMinFreeMb: z.number().optional(),
  speed: z.number(),
  labels: z.record(z.string(), z.string()),
  slotsFree: z.number(),
  /** Whether the agent enforces its attempts' memory, CPU and process limits (cgroups). */
  enforces: z.boolean().optional(),
  /** The GPU device ids the agent declares (`--gpus`); absent from agents without any (or older ones). */
  gpus: z.array(z.string().regex(/^[0-9]+$/)).optional(),
  /**
   * With GPUs: whether each attempt is kept from the GPUs not given to it (a devices cgroup); false
   * where it is not (cgroup v2, no cgroups), when a job can open any of the host's GPUs.
   */
  gpusIsolated: z.boolean().optional(),
  /** Units of each countable resource the agent declares (`--resource name=N`). */
  resources: z.record(z.string(), z.int().min(0)).optional(),
  /** The folders the host shares with others (`--shared PATH`), absolute; empty or absent: none. */
  shared: z.array(z.string()).optional(),
  /**
   * What the agent moves itself besides the server's files (model/transfers.ts: `s3-inputs`,
   * `url-outputs`); absent from agents of earlier releases, which get no job that needs any.
   */
  transfers: z.array(z.string().max(64)).max(64).optional(),
  /**
   * The OCI runtime the agent runs containers with (`--container-runtime`, docs/containers.md);
   * absent: none, jobs with a `container` do not go there (containersUnavailable says why).
   */
  containers: z
    .object({ runtime: z.string().max(64), path: z.string().max(4096), version: z.string().max(200) })
    .optional(),
  /** Why the agent runs no container (the runtime it looked for, and what failed); absent with a runtime. */
  containersUnavailable: z.string().max(1000).optional(),
});

const attemptRef = {
  jobId: z.string(),
  taskIndex: z.int().min(0),
  attempt: z.int().min(1),
  /** A multi-node attempt's rank, where a host may run several (absent: every rank of it on the host). */
  rank: z.int().min(0).optional(),
};

/** What the agent knows of an attempt when it (re)connects. */
const heldAttempt = z.object({
  ...attemptRef,
  state: z.enum(["running", "ended"]),
});

// ---- agent -> server

/** Requirements a job writes for itself are an expression, not a document: longer texts are refused. */
export const REQUIREMENTS_MAX_CHARS = 4096;

export const helloMessage = z.object({
  type: z.literal("hello"),
  v: z.literal(PROTOCOL_VERSION),
  name: z.string().min(1),
  /** The join token: what a host that has no credential yet joins with. */
  token: z.string(),
  /**
   * The host credential: it speaks for this host name once the server has it. At the first join
   * (with the join token) the one the agent made and proposes, which the server keeps.
   */
  credential: z.string().optional(),
  pool: z.string(),
  slots: z.int().min(1),
  labels: z.record(z.string(), z.string()),
  facts: hostFacts,
  attempts: z.array(heldAttempt),
  /** A pilot's walltime end (ms since the epoch): the server moves its work away before it. */
  endsAt: z.int().positive().optional(),
  /** The agent's release (package.json's version), named when the server refuses its protocol version. */
  release: z.string().max(64).optional(),
  /** The address other hosts reach this one at (multi-node jobs' nodes file and coordinator). */
  address: z.string().min(1).optional(),
  /** The agent is leaving (a pilot whose batch job ends): it is drained from its hello on. */
  leaving: z.boolean().optional(),
  /** The agent reads `batch` frames (turn-frames.ts): the server may send it its messages so. */
  batches: z.boolean().optional(),
});

/**
 * The most objects a heartbeat's `cacheHeld` names: its cache's most recently used (about 25 KB of
 * JSON at most, and sent only when it changed: agent/cache/held-summary.ts).
 */
export const CACHE_HELD_MAX = 256;

/** An object a host's content cache holds: its SHA-256 (hex) and size. */
export const heldObject = z.object({ sha256: z.string().regex(/^[0-9a-f]{64}$/), bytes: z.int().min(0) });

export const heartbeatMessage = z.object({
  type: z.literal("heartbeat"),
  facts: hostFacts,
  /** What running jobs wrote in $STEWARD_PROGRESS_FILE (0..1), for estimates of remaining time. */
  progress: z.array(z.object({ ...attemptRef, fraction: z.number().min(0).max(1) })).default([]),
  /**
   * What running jobs wrote in $STEWARD_REQUIREMENTS_FILE (self-migration), sent with every
   * heartbeat while the file exists; the server acts once per distinct text.
   */
  requirements: z.array(z.object({ ...attemptRef, text: z.string() })).default([]),
  /** The host's content cache's counters since the agent started (absent from older agents). */
  cache: z
    .object({
      hits: z.int().min(0),
      misses: z.int().min(0),
      bytesFetched: z.int().min(0),
      bytesSaved: z.int().min(0),
      bytesHeld: z.int().min(0),
    })
    .optional(),
  /**
   * What the host's content cache holds (its most recently used objects first, at most
   * CACHE_HELD_MAX), for the scheduler's data affinity: sent with the first heartbeat of a
   * connection and then whenever it changes; absent: the same as this connection last said (or an
   * older agent, which says nothing of it).
   */
  cacheHeld: z.array(heldObject).max(CACHE_HELD_MAX).optional(),
});

export const startedEvent = z.object({
  kind: z.literal("started"),
  ...attemptRef,
  pid: z.int(),
  /** Rank 0 of a multi-node job: the port its agent found free for the gang's coordinator. */
  coordinatorPort: z.int().min(1).max(65535).optional(),
});

export const agentOutcome = z.enum([
  "succeeded",
  "failed",
  "timed_out",
  "cancelled",
  "preempted",
  "migrated",
  "lost",
]);

export const endedEvent = z.object({
  kind: z.literal("ended"),
  ...attemptRef,
  outcome: agentOutcome,
  exitCode: z.int().nullable(),
  reason: z.string().nullable(),
  /** Output files uploaded for this attempt (relative paths), before this report was sent. */
  outputs: z.array(z.string()),
  /**
   * For `lost`: whose failure it was. `staging` (inputs or outputs could not be moved) is a system
   * failure that does not count as a host loss; absent means the host's. For `failed`: `oom` when
   * the attempt was killed for its memory limit (a retry may grow it, retry.memoryGrowth).
   */
  cause: z.enum(["host", "staging", "oom"]).optional(),
  /** What the attempt used, measured by the agent (absent from agents that did not measure). */
  usage: z
    .object({
      wallSeconds: z.number().min(0),
      /** CPU time, from the attempt's cgroup (or its process); null when not measured. */
      cpuUserSeconds: z.number().min(0).nullable(),
      cpuSystemSeconds: z.number().min(0).nullable(),
      /** The most memory the attempt held at once, MB; null when not measured. */
      peakMemoryMb: z.number().min(0).nullable(),
      /** Processes the kernel killed for the attempt's memory limit. */
      oomKills: z.int().min(0),
    })
    .optional(),
});

/** A pilot's agent is leaving (its batch job ends): the server places no more work on it. */
export const leavingEvent = z.object({ kind: z.literal("leaving"), reason: z.string() });

/** Reports that change state travel through the agent's outbox: numbered, resent until acknowledged. */
export const reportMessage = z.object({
  type: z.literal("report"),
  seq: z.int().min(1),
  event: z.discriminatedUnion("kind", [startedEvent, endedEvent, leavingEvent]),
});

/** Log bytes, at an offset of the attempt's stdout or stderr; resending a chunk is harmless. */
export const logMessage = z.object({
  type: z.literal("log"),
  ...attemptRef,
  stream: z.enum(["stdout", "stderr"]),
  offset: z.int().min(0),
  data: z.string(), // base64
});

/** A batch holds at most this many messages, */
export const BATCH_MAX_MESSAGES = 256;
/** and its senders start a new one before its messages' text passes this many bytes (one alone may). */
export const BATCH_MAX_BYTES = 1024 * 1024;

/** Messages an agent sent in one turn, in order (to a server whose welcome said `batches`); never a hello or a log. */
export const agentBatchMessage = z.object({
  type: z.literal("batch"),
  messages: z
    .array(z.discriminatedUnion("type", [heartbeatMessage, reportMessage]))
    .min(2)
    .max(BATCH_MAX_MESSAGES),
});

export const agentMessage = z.discriminatedUnion("type", [
  helloMessage,
  heartbeatMessage,
  reportMessage,
  logMessage,
  agentBatchMessage,
]);

// ---- server -> agent

export const welcomeMessage = z.object({
  type: z.literal("welcome"),
  v: z.literal(PROTOCOL_VERSION),
  heartbeatSeconds: z.number().positive(),
  /** The server's release, named when the agent leaves a server of another protocol version. */
  release: z.string().max(64).optional(),
  /**
   * The server keeps an attempt's stdout and stderr up to this many bytes each (`--max-log-mb`):
   * the agent sends no more of a log than one byte past it (absent: no limit).
   */
  maxLogBytes: z.int().min(1).optional(),
  /** Attempts named in hello that are no longer current: kill them, report nothing more of them. */
  kill: z.array(z.object(attemptRef)),
  /**
   * The host credential (the agent joined with a join token): the one it proposed, or a new one the
   * server made instead; keep it and present it from now on.
   */
  credential: z.string().optional(),
  /** The server reads `batch` frames (turn-frames.ts): the agent may send it its reports so. */
  batches: z.boolean().optional(),
});

export const rejectMessage = z.object({ type: z.literal("reject"), reason: z.string() });

export const startMessage = z.object({
  type: z.literal("start"),
  ...attemptRef,
  /** The job's owner: an agent with --run-as-owner runs the job as the local account of that name. */
  owner: z.string(),
  restarted: z.boolean(),
  command: z.union([z.string(), z.array(z.string())]),
  env: z.record(z.string(), z.string()),
  inputs: z.array(z.string()),
  /**
   * The SHA-256 of uploaded `inputs` as the server stored them (hex, by path): the agent takes such
   * an input from its cache by it without asking the server (a HEAD) first. Absent, or without an
   * input's path (a job submitted to an earlier version): the agent asks.
   */
  inputDigests: z.record(z.string(), z.string().regex(/^[0-9a-f]{64}$/)).optional(),
  /**
   * Inputs the agent fetches from their URLs itself (the job file's `{url, sha256, as}`), each
   * with its name in the working folder resolved; absent: none. An s3: one only to agents whose
   * `transfers` fact says `s3-inputs` (model/transfers.ts).
   */
  urlInputs: z
    .array(
      z.object({
        url: z.string(),
        sha256: z
          .string()
          .regex(/^[0-9a-f]{64}$/)
          .optional(),
        as: z.string(),
        /** The secret of `secrets` that signs an s3: input (absent: the agent's own credentials). */
        credentials: z.string().optional(),
      }),
    )
    .optional(),
  /** The outputs the server collects (the job file's plain paths). */
  outputs: z.array(z.string()),
  /**
   * Outputs the agent pushes to a URL itself once the job succeeded (the job file's `{path, to}`,
   * an array's parameter put in); absent: none. Sent only to agents whose `transfers` fact says
   * `url-outputs` (model/transfers.ts).
   */
  urlOutputs: z
    .array(z.object({ path: z.string(), to: z.string(), credentials: z.string().optional() }))
    .optional(),
  /**
   * The values of the job owner's secrets that `urlInputs` and `urlOutputs` name by `credentials`,
   * by name (one removed since the submit is absent: its transfers fail naming it). Only in this
   * message: the agent keeps them in memory for the attempt, never in its folder (start.json), and
   * sends them to no one. Sent only to agents whose `transfers` fact says `s3-credentials`.
   */
  secrets: z.record(z.string(), secretValueSchema).optional(),
  cpus: z.int().min(1),
  /** The task's memory, MB: with enforcement, its limit (absent or 0: none). */
  memoryMb: z.number().min(0).optional(),
  /** With enforcement, how many processes the attempt may have at once (absent: the agent's default). */
  maxProcesses: z.int().min(1).optional(),
  /** The GPU device ids of the host given to this attempt (CUDA_VISIBLE_DEVICES); absent: none. */
  gpus: z.array(z.string()).optional(),
  /** Units of the host's countable resources given to this attempt, by name (STEWARD_RESOURCE_<NAME>). */
  resources: z.record(z.string(), z.int().min(1)).optional(),
  timeLimitSeconds: z.number().positive().nullable(),
  /**
   * The job file's `workdir`: the job runs in this folder (on a folder the host shares), not in the
   * attempt's run/; absent: run/. No inputs or outputs go with it.
   */
  workdir: z.string().optional(),
  /**
   * The job file's `container`, its mounts' defaults filled in (model/container-spec.ts): the
   * command runs in that image. Sent only to agents with a container runtime (their `containers` fact).
   */
  container: z
    .object({
      image: z.string(),
      mounts: z.array(z.object({ source: z.string(), target: z.string(), readOnly: z.boolean() })),
      entrypoint: z.array(z.string()).optional(),
      network: z.enum(["host", "none"]),
    })
    .optional(),
  graceSeconds: z.number().min(0),
  /** How often the agent uploads the checkpoint folder's changes. */
  checkpointIntervalSeconds: z.number().positive(),
  /** A rank of a multi-node job (absent for a single-host attempt). */
  gang: z
    .object({
      rank: z.int().min(0),
      /** Every rank's host and address, rank 0 first. */
      nodes: z.array(z.object({ host: z.string(), address: z.string() })).min(2),
      /** host:port of rank 0's coordinator; null in rank 0's own start (its agent picks the port). */
      coordinator: z.string().nullable(),
      /** Outputs go under this folder (`rank-R`, with `outputsFrom: all`), else at the top. */
      outputsUnder: z.string().nullable().default(null),
    })
    .optional(),
});

export const stopMessage = z.object({
  type: z.literal("stop"),
  ...attemptRef,
  /** The outcome the attempt ends with once stopped. */
  outcome: z.enum(["cancelled", "preempted", "migrated", "lost"]),
  reason: z.string(),
  graceSeconds: z.number().min(0),
});

export const ackMessage = z.object({ type: z.literal("ack"), seq: z.int().min(1) });

/** Messages the server sent an agent in one turn, in order (to an agent whose hello said `batches`). */
export const serverBatchMessage = z.object({
  type: z.literal("batch"),
  messages: z
    .array(z.discriminatedUnion("type", [startMessage, stopMessage, ackMessage]))
    .min(2)
    .max(BATCH_MAX_MESSAGES),
});

export const serverMessage = z.discriminatedUnion("type", [
  welcomeMessage,
  rejectMessage,
  startMessage,
  stopMessage,
  ackMessage,
  serverBatchMessage,
]);

export type HelloMessage = z.infer<typeof helloMessage>;
export type HeartbeatMessage = z.infer<typeof heartbeatMessage>;
export type ReportMessage = z.infer<typeof reportMessage>;
export type ReportEvent = ReportMessage["event"];
export type StartedEvent = z.infer<typeof startedEvent>;
export type EndedEvent = z.infer<typeof endedEvent>;
export type LogMessage = z.infer<typeof logMessage>;
export type AgentMessage = z.infer<typeof agentMessage>;
export type StartMessage = z.infer<typeof startMessage>;
export type ServerMessage = z.infer<typeof serverMessage>;
/** What a batch from an agent holds. */
export type AgentBatchedMessage = z.infer<typeof agentBatchMessage>["messages"][number];
export type AgentOutcome = z.infer<typeof agentOutcome>;

/**
 * A checkpoint: the files of the checkpoint folder, each named by the SHA-256 of its content. Its
 * paths are where a restarted attempt's agent writes (checkpoint-paths.ts): the server refuses a
 * manifest with one that could leave the folder, and so does the agent.
 */
export const checkpointManifest = z
  .object({
    files: z.array(
      z.object({
        path: z.string().min(1),
        sha256: z.string().regex(/^[0-9a-f]{64}$/),
        bytes: z.int().min(0),
      }),
    ),
    /**
     * A multi-node job's rank: its rank, and the generation the job declared for this state (the
     * same on every rank for one coordinated checkpoint). Absent for a single-host attempt.
     */
    gang: z.object({ rank: z.int().min(0), generation: z.int().min(1) }).optional(),
  })
  .superRefine((manifest, context) => {
    for (const { index, message } of checkpointPathIssues(manifest.files.map((file) => file.path)))
      context.addIssue({ code: "custom", path: ["files", index, "path"], message });
  });
export type CheckpointManifest = z.infer<typeof checkpointManifest>;

/** A checkpoint manifest that does not fit the schema (a path that could leave its folder, say). */
export class CheckpointManifestError extends Error {}

/**
 * A manifest from a server or a store, checked: throws CheckpointManifestError naming the first
 * field at fault (`files[1].path: "../x" leaves its folder`).
 */
export function readCheckpointManifest(value: unknown): CheckpointManifest {
  const parsed = checkpointManifest.safeParse(value);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  const field = issue.path.reduce<string>(
    (out, part) =>
      typeof part === "number" ? `${out}[${part}]` : out ? `${out}.${String(part)}` : String(part),
    "",
  );
  throw new CheckpointManifestError(`checkpoint manifest refused: ${field || "manifest"}: ${issue.message}`);
}

/** Paths of the HTTP routes agents use to move files (join-token auth). */
/**
 * The header with which the server answers an input's GET or HEAD (`agentFileRoutes.input`): the
 * SHA-256 of its content, hex, by which agents cache it. Absent for an input stored without one.
 */
export const INPUT_DIGEST_HEADER = "x-steward-sha256";

export const agentFileRoutes = {
  input: (jobId: string, path: string) => `/api/v1/agent/jobs/${enc(jobId)}/inputs/${encPath(path)}`,
  output: (jobId: string, task: number, attempt: number, path: string) =>
    `/api/v1/agent/jobs/${enc(jobId)}/tasks/${task}/attempts/${attempt}/outputs/${encPath(path)}`,
  /** GET: the task's last committed checkpoint manifest (404 when none); a gang's rank asks for its own. */
  checkpoint: (jobId: string, task: number, rank?: number) =>
    `/api/v1/agent/jobs/${enc(jobId)}/tasks/${task}/checkpoint${rank === undefined ? "" : `?rank=${rank}`}`,
  /** GET: one object of the task's checkpoint. */
  checkpointObject: (jobId: string, task: number, sha256: string) =>
    `/api/v1/agent/jobs/${enc(jobId)}/tasks/${task}/checkpoint/objects/${sha256}`,
  /** PUT: upload an object for this attempt's next checkpoint. */
  uploadObject: (jobId: string, task: number, attempt: number, sha256: string) =>
    `/api/v1/agent/jobs/${enc(jobId)}/tasks/${task}/attempts/${attempt}/checkpoint/objects/${sha256}`,
  /** POST: commit a manifest whose objects are all uploaded; answers the new generation. */
  commitCheckpoint: (jobId: string, task: number, attempt: number) =>
    `/api/v1/agent/jobs/${enc(jobId)}/tasks/${task}/attempts/${attempt}/checkpoint`,
};

function enc(part: string): string {
  return encodeURIComponent(part);
}

function encPath(path: string): string {
  return path.split("/").map(enc).join("/");
}

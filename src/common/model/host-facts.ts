// What an agent reports of its host: the facts the scheduler matches jobs' requirements against
// (`host` in CEL, cel.ts) and that a host's record holds (records.ts).

/** The host facts; `host` in CEL. Numbers are CEL doubles. */
export interface HostFacts {
  name: string;
  pool: string;
  os: string;
  arch: string;
  cpus: number;
  memoryMb: number;
  memFreeMb: number;
  load1: number;
  cpuFree: number;
  diskFreeMb: number;
  /**
   * Whether the agent's work folder is full (less free than `diskMinFreeMb`, after its content
   * cache gave back what it could): the host takes no new work (the scheduler's feasibility stage
   * `workFolderHasRoom`). An agent of an earlier release sends none: never full.
   */
  diskFull?: boolean;
  /** The free space (MiB) below which the agent's work folder is full. */
  diskMinFreeMb?: number;
  speed: number;
  labels: Record<string, string>;
  slotsFree: number;
  /**
   * Whether the host's agent enforces attempts' memory, CPU and process limits. An agent of an
   * earlier release sends none: `host.enforces` cannot be evaluated there, so a job that requires
   * it does not go there.
   */
  enforces?: boolean;
  /** The GPU device ids the agent declares (`--gpus`); absent: none. Given to attempts one by one. */
  gpus?: string[];
  /** With GPUs: whether each attempt is kept from the GPUs not given to it (false: a job can open any). */
  gpusIsolated?: boolean;
  /** Units of each countable resource the agent declares (`--resource name=N`); absent: none. */
  resources?: Record<string, number>;
  /**
   * The folders the host shares with others (`--shared PATH`): a job's `workdir` runs only on a host
   * sharing a folder that holds it (shared-folders.ts). An agent of an earlier release sends none.
   */
  shared?: string[];
  /**
   * What the agent moves itself besides the server's files (transfers.ts): a job that needs one of
   * these runs only where it is listed. An agent of an earlier release sends none.
   */
  transfers?: string[];
  /**
   * The OCI runtime the host's agent runs containers with (docs/containers.md): a job with a
   * `container` goes only where there is one. Absent: none (containersUnavailable says why), or an
   * agent of an earlier release.
   */
  containers?: { runtime: string; path: string; version: string };
  /** Why the host's agent runs no container: the runtime it looked for and what failed. */
  containersUnavailable?: string;
  /**
   * Seconds until the host's walltime ends (a pilot's `--ends-at`); Infinity on hosts without one.
   * Filled in by the server when it looks at the host, not sent by the agent.
   */
  secondsLeft?: number;
}

/**
 * What a host's content cache did since its agent started (its heartbeats carry them; the server's
 * /metrics shows them per host): files placed from the cache and files fetched, the bytes that came
 * over the network and those that did not have to, and the bytes it holds now.
 */
export interface HostCacheCounters {
  hits: number;
  misses: number;
  bytesFetched: number;
  bytesSaved: number;
  bytesHeld: number;
}

/**
 * An object a host's content cache holds, by the SHA-256 of its content (hex), with its size: its
 * heartbeats name the ones it used last (`cacheHeld`), for the scheduler's data affinity.
 */
export interface HeldObject {
  sha256: string;
  bytes: number;
}

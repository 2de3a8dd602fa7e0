// A batch system behind a pool: it submits pilot jobs (each runs one Steward agent), lists them
// with their batch state, and cancels them. One implementation a batch system (slurm.ts); the pool
// manager above it knows none of their commands.

/** A pilot as its batch system sees it. */
export interface PilotStatus {
  /** The batch system's job id. */
  id: string;
  /** pending: queued; running: its agent may be up; ending: finishing or being cancelled. */
  state: "pending" | "running" | "ending";
  /** The batch system's own word for the state (e.g. PENDING, RUNNING, COMPLETING). */
  batchState: string;
  /** Why it waits or ends, as the batch system says (e.g. Priority, PartitionDown), or "". */
  reason: string;
}

/**
 * Whose pilots a command is about: a pool's pilots under one broker carry a batch job name unique
 * to both, and are submitted, listed and cancelled as the pool's account only, so that jobs of other
 * accounts (however they are named) are never taken for pilots, nor cancelled.
 */
export interface PilotOwner {
  /** The batch job name of the pool's pilots (pools/pool-token.ts pilotJobName). */
  jobName: string;
  /** The local account the pilots run as. */
  account: string;
  /** Prefix that runs a command as `account` ([] when it is the broker's own). */
  runAs: readonly string[];
}

/** What a pilot asks the batch system for. */
export interface PilotRequest {
  /** The pool it belongs to (its agent's --pool). */
  pool: string;
  owner: PilotOwner;
  cpus: number;
  walltimeSeconds: number;
  /** The command the pilot runs (a Steward agent), as one shell command line. */
  command: string;
  /** The pilot's folder (the account's): its working directory, and where its output is written. */
  logDir: string;
  partition?: string;
  extraArgs?: readonly string[];
}

/** A batch command failed; `message` is the batch system's own, for the pool's state. */
export class DriverError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "DriverError";
  }
}

export interface BatchDriver {
  readonly name: string;
  /** Submits one pilot; its batch job id. Throws DriverError with the batch system's message. */
  submit(request: PilotRequest): Promise<string>;
  /**
   * The owner's jobs of the pilots' name the batch system still knows (queued, running, ending).
   * Throws DriverError when it cannot tell: a failed listing is not an empty one.
   */
  list(owner: PilotOwner): Promise<PilotStatus[]>;
  /** Cancels a pilot of the owner's (never a job of another account); one already gone is not an error. */
  cancel(id: string, owner: PilotOwner): Promise<void>;
}

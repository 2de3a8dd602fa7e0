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

/** What a pilot asks the batch system for. */
export interface PilotRequest {
  /** The pool it belongs to (its agent's --pool). */
  pool: string;
  cpus: number;
  walltimeSeconds: number;
  /** The command the pilot runs (a Steward agent), as one shell command line. */
  command: string;
  /** A folder the batch system writes the pilot's output into. */
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
   * The pool's pilots the batch system still knows (queued, running, ending). Throws DriverError
   * when it cannot tell: a failed listing is not an empty one.
   */
  list(pool: string): Promise<PilotStatus[]>;
  /** Cancels a pilot; a pilot already gone is not an error. */
  cancel(id: string): Promise<void>;
}

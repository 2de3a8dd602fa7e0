/** True when this attempt was restarted from a checkpoint (STEWARD_RESTARTED=1). */
export function restarted(): boolean;
/** The checkpoint folder: $STEWARD_CHECKPOINT_DIR, or ./.steward-checkpoint outside Steward. */
export function checkpointDir(): string;
/** The last saved state (parsed JSON for .json names, bytes otherwise), or null when there is none. */
export function loadCheckpoint<T = unknown>(name?: string): T | Buffer | null;
/** Saves state atomically (temporary file, flush, rename). Objects are stored as JSON. */
export function saveCheckpoint(data: unknown, name?: string): void;
/** Tells the scheduler how far the job is, a fraction from 0 to 1. */
export function progress(fraction: number): void;
/** Replaces the job's requirements (CEL over host facts); a host that no longer satisfies them moves the job. */
export function requirements(expression: string): void;
/** Calls `handler` when Steward asks the job to stop (SIGTERM); the job then has the grace period. */
export function onStopRequested(handler: () => void | Promise<void>): void;
/** Whether a stop was asked (SRS Check_Stop). */
export function isStopRequested(): boolean;

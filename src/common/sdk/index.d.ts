/** True when this attempt was restarted from a checkpoint (STEWARD_RESTARTED=1). */
export function restarted(): boolean;
/** The checkpoint folder: $STEWARD_CHECKPOINT_DIR, or ./.steward-checkpoint outside Steward. */
export function checkpointDir(): string;
/** The last saved state (parsed JSON for .json names, bytes otherwise), or null when there is none. */
export function loadCheckpoint<T = unknown>(name?: string): T | Buffer | null;
/**
 * Saves state atomically (temporary file, flush, rename). Objects are stored as JSON. A rank of a
 * multi-node job has its declared generation taken back first, until checkpointGeneration.
 */
export function saveCheckpoint(data: unknown, name?: string): void;
/** Multi-node jobs: the state this rank saved is generation N of the gang's coordinated checkpoint. */
export function checkpointGeneration(generation: number): void;
/** This process's rank in a multi-node job (0 of 1 in a single-host one), its coordinator and nodes file. */
export function gang(): { rank: number; count: number; coordinator: string | null; nodesFile: string | null };
/** Tells the scheduler how far the job is, a fraction from 0 to 1. */
export function progress(fraction: number): void;
/** Replaces the job's requirements (CEL over host facts); a host that no longer satisfies them moves the job. */
export function requirements(expression: string): void;
/** Calls `handler` when Steward asks the job to stop (SIGTERM); the job then has the grace period. */
export function onStopRequested(handler: () => void | Promise<void>): void;
/** Whether a stop was asked (SRS Check_Stop). */
export function isStopRequested(): boolean;

// Steward's job SDK: the modern form of the SRS checkpoint library (Init, Register, Check_Stop,
// Restart_Value, Read). Plain JavaScript with types beside it (index.d.ts), so that a job runs it
// on whatever Node.js its host has. Jobs started by Steward find this file at $STEWARD_SDK.

import {
  closeSync,
  fsyncSync,
  mkdirSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  writeSync,
} from "node:fs";
import { dirname, join } from "node:path";

const DEFAULT_NAME = "state.json";
/** Where a multi-node job's rank declares the generation of the state it saved. */
const GENERATION_FILE = ".generation";
let stopRequested = false;
const stopHandlers = [];

/** True when this attempt was restarted from a checkpoint (STEWARD_RESTARTED=1). */
export function restarted() {
  return process.env.STEWARD_RESTARTED === "1";
}

/** The checkpoint folder: $STEWARD_CHECKPOINT_DIR, or ./.steward-checkpoint outside Steward. */
export function checkpointDir() {
  return process.env.STEWARD_CHECKPOINT_DIR ?? join(process.cwd(), ".steward-checkpoint");
}

/** The last saved state (parsed JSON for .json names, bytes otherwise), or null when there is none. */
export function loadCheckpoint(name = DEFAULT_NAME) {
  let bytes;
  try {
    bytes = readFileSync(join(checkpointDir(), name));
  } catch (error) {
    if (error && error.code === "ENOENT") return null;
    throw error;
  }
  return name.endsWith(".json") ? JSON.parse(bytes.toString("utf8")) : bytes;
}

/**
 * Saves state atomically: written to a temporary file, flushed, then renamed over the old one,
 * so the agent never uploads half a checkpoint. Objects are stored as JSON.
 */
export function saveCheckpoint(data, name = DEFAULT_NAME) {
  const path = join(checkpointDir(), name);
  const bytes = typeof data === "string" || data instanceof Uint8Array ? data : JSON.stringify(data);
  // A multi-node job's declared generation is taken back first: until checkpointGeneration says
  // the next one, the folder is no generation's, and the agent commits none of it (it would mix
  // one generation's files with the next's).
  rmSync(join(checkpointDir(), GENERATION_FILE), { force: true });
  writeAtomically(path, bytes);
}

/**
 * Multi-node jobs: declares that the state this rank has saved is generation `generation` of the
 * gang's coordinated checkpoint (an integer that grows, the same on every rank for one state: the
 * iteration, say). The agent commits the folder under it; a restart restores every rank to the
 * newest generation all ranks committed. Call it after saveCheckpoint.
 */
export function checkpointGeneration(generation) {
  if (!Number.isSafeInteger(generation) || generation < 1)
    throw new TypeError("checkpointGeneration needs a whole number from 1");
  writeAtomically(join(checkpointDir(), GENERATION_FILE), String(generation));
}

/** The rank of this process in a multi-node job (0 in a single-host one), and the number of ranks. */
export function gang() {
  return {
    rank: Number(process.env.STEWARD_NODE_RANK ?? 0),
    count: Number(process.env.STEWARD_NODE_COUNT ?? 1),
    coordinator: process.env.STEWARD_COORDINATOR || null,
    nodesFile: process.env.STEWARD_NODES_FILE || null,
  };
}

/** Tells the scheduler how far the job is, a fraction from 0 to 1 ($STEWARD_PROGRESS_FILE). */
export function progress(fraction) {
  if (!Number.isFinite(fraction)) throw new TypeError("progress needs a number from 0 to 1");
  const path = process.env.STEWARD_PROGRESS_FILE;
  if (!path) return;
  writeAtomically(path, String(Math.min(1, Math.max(0, fraction))));
}

/**
 * Replaces the job's requirements (a CEL expression over host facts) for its later placements
 * ($STEWARD_REQUIREMENTS_FILE); if this host no longer satisfies them, the job is moved, with its
 * checkpoint, to one that does (self-migration). An invalid expression is reported in the job's
 * events and ignored.
 */
export function requirements(expression) {
  if (typeof expression !== "string") throw new TypeError("requirements needs a CEL expression");
  const path = process.env.STEWARD_REQUIREMENTS_FILE;
  if (!path) return;
  writeAtomically(path, expression);
}

/**
 * Calls `handler` when Steward asks the job to stop (migration, preemption, hold, cancel: SIGTERM).
 * The job then has the checkpoint grace period to save its state and exit.
 */
export function onStopRequested(handler) {
  stopHandlers.push(handler);
  if (stopHandlers.length === 1) {
    process.on("SIGTERM", () => {
      stopRequested = true;
      for (const each of stopHandlers) Promise.resolve().then(() => each());
    });
  }
}

/** Whether a stop was asked (SRS Check_Stop), for loops that poll instead of using a handler. */
export function isStopRequested() {
  if (stopHandlers.length === 0) onStopRequested(() => {});
  return stopRequested;
}

function writeAtomically(path, bytes) {
  mkdirSync(dirname(path), { recursive: true });
  const temporary = `${path}.${process.pid}.tmp`;
  const fd = openSync(temporary, "w");
  try {
    writeSync(fd, typeof bytes === "string" ? Buffer.from(bytes) : bytes);
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
  renameSync(temporary, path);
}

// Views of jobs, hosts and running tasks as the scheduler is handed them, built from a few fields
// for the tables of the scheduler's stage tests (test/unit/broker/scheduler/stages/).

import type { AttemptProgress } from "../../src/broker/scheduler/estimate.ts";
import type { HostView, JobView, RunningTaskView } from "../../src/broker/scheduler/view.ts";
import { compileExpression } from "../../src/common/model/cel.ts";
import type { HostFacts } from "../../src/common/model/host-facts.ts";

export const NOW = 1_000_000;

/** A job of one ready task (task 0) and one cpu, unless told; `requirements` and `rank` as CEL text. */
export function jobView(
  id: string,
  fields: Partial<Omit<JobView, "requirements" | "rank">> & { requirements?: string; rank?: string } = {},
): JobView {
  const { requirements, rank, ...rest } = fields;
  return {
    id,
    priority: 0,
    createdAt: 0,
    seq: 0,
    cpus: 1,
    memoryMb: 0,
    requirements: requirements ? compileExpression(requirements) : null,
    rank: rank ? compileExpression(rank) : null,
    *readyTasks() {
      yield 0;
    },
    ...rest,
  };
}

/** Only these tasks ready, in this order. */
export const readyTasks = (...indexes: number[]): Pick<JobView, "readyTasks"> => ({
  *readyTasks() {
    yield* indexes;
  },
});

/** A ready, connected host of 4 slots, all free, and 8 GB, unless told; `facts` over the usual ones. */
export function hostView(
  name: string,
  fields: Partial<Omit<HostView, "facts">> & { facts?: Partial<HostFacts> } = {},
): HostView {
  const { facts, ...rest } = fields;
  const slots = rest.slots ?? 4;
  return {
    name,
    state: "ready",
    connected: true,
    slots,
    slotsFree: slots,
    memoryFreeMb: 8192,
    ...rest,
    facts: {
      name,
      pool: "local",
      os: "linux",
      arch: "x86_64",
      cpus: slots,
      memoryMb: 8192,
      memFreeMb: 8192,
      load1: 0,
      cpuFree: 1,
      diskFreeMb: 10_000,
      speed: 1,
      labels: {},
      slotsFree: slots,
      ...facts,
    },
  };
}

/** Progress of an attempt that started `startedAgo` s before NOW and is at `fraction` now. */
export function progressOf(fraction: number, startedAgo: number): AttemptProgress {
  return { startedAt: NOW - startedAgo * 1000, baseline: null, last: { fraction, at: NOW } };
}

/**
 * Task 0, attempt 1, of job `job` running on `host`, with a checkpoint, at `progress` (half done
 * after 1,000 s, unless told: 1,000 s left).
 */
export function runningView(
  job: JobView,
  host: string,
  fields: Partial<RunningTaskView> = {},
): RunningTaskView {
  return {
    job,
    taskIndex: 0,
    attempt: 1,
    host,
    stopping: false,
    progress: progressOf(0.5, 1000),
    checkpointBytes: 1000,
    startedByPreemption: false,
    lastMovedAt: null,
    ...fields,
  };
}

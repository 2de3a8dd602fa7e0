// The read-only view of the state that the scheduler is handed (Nomad's "state + planner").
// The server builds it; tests build it from tables. No I/O, no clock: `now` is passed in.

import type { CompiledExpression } from "../model/cel.ts";
import type { HostFacts } from "../model/records.ts";
import type { HostState } from "../model/states.ts";

export interface JobView {
  id: string;
  priority: number;
  createdAt: number;
  /** Submission order, to break ties between jobs created in the same millisecond. */
  seq: number;
  cpus: number;
  memoryMb: number;
  requirements: CompiledExpression | null;
  rank: CompiledExpression | null;
  /** Task indexes that may start at `now` (pending, back-off over), in the order they should start. */
  readyTasks(now: number): Iterable<number>;
  /** Per-task placement constraints (a migration names or avoids a host); absent means any host. */
  allowsHost?(taskIndex: number, host: string): boolean;
}

export interface HostView {
  name: string;
  state: HostState;
  /** Whether the agent is connected now: a host that is not reachable gets no new work. */
  connected: boolean;
  slots: number;
  slotsFree: number;
  /** Memory the host offers for placement, less what placed attempts reserve. */
  memoryFreeMb: number;
  facts: HostFacts;
}

export interface SchedulerState {
  now: number;
  /** Jobs with ready tasks, in queue order (see compareQueueOrder). */
  jobs: readonly JobView[];
  hosts: readonly HostView[];
}

export interface Placement {
  jobId: string;
  taskIndex: number;
  host: string;
}

export interface Plan {
  placements: Placement[];
}

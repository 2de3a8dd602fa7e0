// A scheduling pass's working state (Pass) over hosts built from a few fields, with what it says
// of the jobs it gives up on, and the room it has left: for the tests of the pass and of placing
// a job's tasks in it (test/unit/broker/scheduler/pass.test.ts, job-placement.test.ts).

import { Pass } from "../../src/broker/scheduler/pass.ts";
import type { JobView, SchedulerState } from "../../src/broker/scheduler/view.ts";
import { hostView, type jobView, NOW } from "./scheduler-views.ts";

export type JobFields = Parameters<typeof jobView>[1];
export type HostFields = Parameters<typeof hostView>[1];

/** A pass at NOW over these hosts (by name and fields), and what it says of the jobs it gives up on (`job: why`). */
export function passOver(
  hosts: Record<string, HostFields>,
  state: Partial<SchedulerState> = {},
): { pass: Pass; said: string[] } {
  const said: string[] = [];
  const views = Object.entries(hosts).map(([name, fields]) => hostView(name, fields));
  const trace = { unplaced: (job: JobView, why: string) => said.push(`${job.id}: ${why}`) };
  return { pass: new Pass({ now: NOW, jobs: [], hosts: views, ...state }, trace), said };
}

/** Each host's free slots and memory left in the pass, by name. */
export function roomsOf(pass: Pass): Record<string, [number, number]> {
  return Object.fromEntries(
    [...pass.capacity].map(([name, room]) => [name, [room.slotsFree, room.memoryFreeMb]]),
  );
}

// Placing a job's tasks in a pass, once its turn has come and no limit holds it: room a preemption
// kept goes to its task first; then each ready task goes to the best-ranked feasible host that fits
// (stages/fit.ts, stages/fit-queue.ts), a gang's ranks all at once or none (stages/gang.ts). A
// task with a rule of its own (a migration) is tried alone; an ordinary task that fits nowhere
// speaks for its batch, whose other tasks are not tried again in the pass (batches.ts).

import { batchKey } from "./batches.ts";
import type { Pass, Scored } from "./pass.ts";
import { taskKey } from "./plan.ts";
import { type Capacity, fitsCapacity, type Need, takeRoom } from "./stages/fit.ts";
import { bestFitScan, FitQueue } from "./stages/fit-queue.ts";
import { chooseGangHosts, gangMayReserve, reserveGangHosts } from "./stages/gang.ts";
import type { ScoredHost } from "./stages/rank.ts";
import type { ConstrainedTask, JobView } from "./view.ts";

/** A job's place in its owner's turn: the hosts it may use and what is left to place. */
export interface JobCursor {
  job: JobView;
  /** Its batch key (batches.ts), made when the job's turn comes: most queued jobs get none in a pass. */
  key: string;
  scored: ScoredHost[] | null;
  /** The room left on each scored host, in the same order (the pass's own Capacity objects). */
  rooms: Capacity[] | null;
  /** Shared by the jobs whose hosts are scored alike (Pass.scoredFor). */
  shared: Scored | null;
  /** Tasks with a rule of their own first (migrations), then the ready ones; null until started. */
  tasks: Iterator<TaskToPlace> | null;
}

/** The cursor of a job whose turn has come: nothing worked out yet. */
export function cursorOf(job: JobView): JobCursor {
  return { job, key: batchKey(job), scored: null, rooms: null, shared: null, tasks: null };
}

/** Room a preemption kept goes to its task once the stopped task has freed it. */
export function placeInKeptRoom(pass: Pass): void {
  for (const reserved of pass.state.reserved ?? []) {
    const room = pass.capacity.get(reserved.host);
    const { job } = reserved;
    if (!room) continue;
    const before = Math.max(0, room.slotsFree);
    const need = needOf(job, reserved.taskIndex);
    const kept = {
      ...room,
      slotsFree: room.slotsFree + reserved.held.slots,
      memoryFreeMb: room.memoryFreeMb + reserved.held.memoryMb,
    };
    if (!fitsCapacity(need, kept)) continue;
    takeRoom(kept, need);
    Object.assign(room, kept);
    pass.slotsFree += Math.max(0, room.slotsFree) - before;
    pass.place(job, {
      kind: "task",
      jobId: job.id,
      taskIndex: reserved.taskIndex,
      host: reserved.host,
      reserved: true,
    });
    pass.placedFirst.add(taskKey(job.id, reserved.taskIndex));
    const owner = job.owner ?? "";
    pass.placedCpus.set(owner, (pass.placedCpus.get(owner) ?? 0) + job.cpus);
  }
}

/**
 * The feasibility and rank stages for the job whose turn it is: its feasible hosts, scored, kept on
 * its cursor from its first turn (worked out once for jobs alike: Pass.feasibleFor, scoredFor);
 * false when it may use none in this pass (the pass says why). A gang is scored whatever it finds:
 * it may hold hosts as they free up (placeGang).
 */
export function rankFeasibleHosts(pass: Pass, cursor: JobCursor): boolean {
  const { job, key } = cursor;
  if (isGang(job)) {
    if (!cursor.scored) {
      ({ scored: cursor.scored, rooms: cursor.rooms } = pass.scoredFor(job, key));
      cursor.tasks = tasksToPlace(job, pass.state.now);
    }
    return true;
  }
  if (pass.exhausted.has(key)) {
    pass.trace.unplaced?.(job, "work alike ahead of it found no room in this pass");
    return false;
  }
  if (!cursor.scored) {
    const feasible = pass.feasibleFor(job, key);
    if (feasible.length === 0) {
      pass.exhausted.add(key);
      pass.trace.unplaced?.(job, "no host that takes work matches it");
      return false;
    }
    cursor.shared = pass.scoredFor(job, key);
    ({ scored: cursor.scored, rooms: cursor.rooms } = cursor.shared);
    cursor.tasks = tasksToPlace(job, pass.state.now);
  }
  return true;
}

/**
 * The fit stage for the job, its hosts ranked (rankFeasibleHosts): its next task to the best host
 * with room, or its gang's ranks all at once; false when it has nothing more to place in this pass.
 */
export function placeNext(pass: Pass, cursor: JobCursor): boolean {
  const { job, key } = cursor;
  if (isGang(job)) return placeGang(pass, cursor, job.gang!);
  const { trace } = pass;
  const scored = cursor.scored!;
  for (;;) {
    const next = cursor.tasks!.next();
    if (next.done) return false;
    if (pass.placedFirst.size > 0 && pass.placedFirst.has(taskKey(job.id, next.value.index))) continue;
    const need = needOf(job, next.value.index);
    // Tasks of the batch's own need (almost all) ask the shared queue; the others look at every host.
    const best =
      need === job && !next.value.allows
        ? fitQueueOf(cursor.shared!, need).best()
        : bestFitScan(scored, cursor.rooms!, need, next.value.allows);
    if (best < 0) {
      // A task with a rule or a size of its own is tried alone; an ordinary one speaks for its batch.
      if (need !== job)
        trace.unplaced?.(
          job,
          `task ${next.value.index} needs ${need.memoryMb} MB (grown after running out of memory): no host it matches has that free`,
        );
      const rule = next.value.rule;
      if (rule) {
        // Its rule allows no host with room: the pass says so, and looks again when the rule lapses.
        trace.unplaced?.(job, rule.waitReason ?? `task ${next.value.index}: no host it may go to has room`);
        if (rule.lapsesAt !== undefined) pass.recheckBy(rule.lapsesAt);
      }
      if (next.value.allows || need !== job) continue;
      pass.exhausted.add(key);
      trace.unplaced?.(job, "no host it matches has room left in this pass");
      return false;
    }
    takeRoom(cursor.rooms![best], need);
    pass.slotsFree -= job.cpus;
    pass.place(job, {
      kind: "task",
      jobId: job.id,
      taskIndex: next.value.index,
      host: scored[best].host.name,
    });
    return true;
  }
}

/** Places a gang's ranks all at once, or none; a gang past its reserve time holds hosts as they free up. */
function placeGang(pass: Pass, cursor: JobCursor, gang: NonNullable<JobView["gang"]>): boolean {
  const { job } = cursor;
  const { policy, capacity } = pass;
  const scored = cursor.scored!;
  const next = cursor.tasks!.next();
  if (next.done) return false;
  const restartPool = gang.restartPool ?? policy.restartPool;
  const needs = { ...gang, restartPool, ...needOf(job, next.value.index) };
  const ranks = chooseGangHosts(needs, scored, capacity);
  if (!ranks) {
    const since = job.readySince ?? job.createdAt;
    const reserving = gangMayReserve(since, pass.state.now, policy.gangReserveSeconds);
    if (reserving) for (const name of reserveGangHosts(needs, scored, capacity)) pass.withhold(name);
    pass.trace.unplaced?.(
      job,
      `its ${gang.nodes} ranks find no room at once${reserving ? ": hosts are held for it as they free up" : ""}`,
    );
    return false;
  }
  for (const name of ranks) {
    takeRoom(capacity.get(name)!, needs);
    pass.slotsFree -= job.cpus;
  }
  pass.place(job, { kind: "gang", jobId: job.id, taskIndex: next.value.index, host: ranks[0], ranks });
  return true;
}

/** A job of more than one rank, placed all at once (stages/gang.ts). */
function isGang(job: JobView): boolean {
  return job.gang !== undefined && job.gang.nodes > 1;
}

/**
 * What one task of the job takes of a host: the job's resources, with the task's own memory when a
 * retry after running out of memory grew it (retry.memoryGrowth). The job itself when they agree.
 */
export function needOf(job: JobView, taskIndex: number): Need {
  const memoryMb = job.taskMemoryMb?.(taskIndex);
  return memoryMb === undefined || memoryMb === job.memoryMb ? job : { ...job, memoryMb };
}

/** A task to place: a ready one (`rule` null), or one with a rule of its own (a migration). */
interface TaskToPlace {
  index: number;
  allows: ((host: string) => boolean) | null;
  rule: ConstrainedTask | null;
}

function* tasksToPlace(job: JobView, now: number): Generator<TaskToPlace> {
  // Tasks with a rule of their own (migrations) are few: each is tried on its own.
  for (const task of job.constrainedTasks?.(now) ?? [])
    yield { index: task.index, allows: task.allows, rule: task };
  for (const index of job.readyTasks(now)) yield { index, allows: null, rule: null };
}

/** The queue of the batch's own need over these scored hosts, made at its first task. */
function fitQueueOf(shared: Scored, need: Need): FitQueue {
  shared.queue ??= new FitQueue(shared.scored, shared.rooms, need);
  return shared.queue;
}

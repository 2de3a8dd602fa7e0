// The scheduling pass: reconcile -> feasibility -> fit -> rank -> plan (Nomad's pipeline).
// Room a preemption kept for a task goes to that task first, once it is free (plan.ts).
// Jobs come in bands of QoS tier priority (qos.ts), highest first. Within a band, owners take turns
// by fair share (fair-share.ts): each placement goes to the owner with the highest fair-share
// factor, then the fewest cpus running, counting what this pass has placed, ties to the job
// submitted first; inside an owner's lane, jobs go by job priority, then submit order
// (queue-order.ts): a job's priority orders its owner's own jobs only. A job whose user (or group)
// is at a running limit of its tier waits (qos.ts). Each ready task goes to the best-ranked
// feasible host that fits. A job whose next task fits nowhere does not block the jobs behind it (backfill), and tasks
// alike for placement (a batch) are not tried again once one of them found no room (batches.ts).
// Slots left idle then take replicas of running tasks (stages/replicas.ts). Explain runs the same
// pass dry with a trace (explain.ts), so what it says of a job is what this pass does.

import { batchKey, ExhaustedBatches, scoreKey } from "./batches.ts";
import { NO_SHARE, type OwnerShare } from "./fair-share.ts";
import { preemptionPass, reschedulingPass } from "./metascheduling.ts";
import { type Placement, type Plan, taskKey } from "./plan.ts";
import { policyOf } from "./policy.ts";
import { RunningQuotas } from "./qos.ts";
import { compareTurns } from "./queue-order.ts";
import { type FeasibilityJob, infeasibility } from "./stages/feasibility.ts";
import { type Capacity, capacityOf, fitsCapacity, type Need, takeRoom } from "./stages/fit.ts";
import { bestFitScan, FitQueue } from "./stages/fit-queue.ts";
import { chooseGangHosts, gangMayReserve, reserveGangHosts } from "./stages/gang.ts";
import { type ScoredHost, scoreHosts } from "./stages/rank.ts";
import { placeReplicas } from "./stages/replicas.ts";
import { ArrayThrottle } from "./stages/throttle.ts";
import type {
  ConstrainedTask,
  HostView,
  JobView,
  OwnerQueue,
  PassTrace,
  RunningTaskView,
  SchedulerState,
} from "./view.ts";

/** A job's place in its owner's turn: the hosts it may use and what is left to place. */
interface JobCursor {
  job: JobView;
  /** Its batch key (batches.ts), made when the job's turn comes: most queued jobs get none in a pass. */
  key: string;
  scored: ScoredHost[] | null;
  /** The room left on each scored host, in the same order (the pass's own Capacity objects). */
  rooms: Capacity[] | null;
  /** Shared by the jobs whose hosts are scored alike (scoredFor). */
  shared: Scored | null;
  /** Tasks with a rule of their own first (migrations), then the ready ones; null until started. */
  tasks: Iterator<TaskToPlace> | null;
}

/**
 * An owner's jobs of one QoS band, in queue order, and the owner's standing as the pass goes. The
 * cursor of the job whose turn it is is made when needed: a queue of 100,000 jobs with four free
 * slots makes four cursors, not 100,000, and the owner's queue is read no further than that.
 */
interface Lane {
  share: OwnerShare;
  queue: OwnerQueue;
  cursor: JobCursor | null;
}

export function schedule(state: SchedulerState, trace: PassTrace = {}): Plan {
  const place: Placement[] = [];
  const capacity = new Map<string, Capacity>();
  let totalSlotsFree = 0;
  for (const host of state.hosts) {
    if (host.state !== "ready" || !host.connected) continue;
    capacity.set(host.name, capacityOf(host));
    totalSlotsFree += Math.max(0, host.slotsFree);
  }
  const plan: Plan = { place, stop: [], preempt: [] };
  /** The jobs of this pass's placements, by id (replicas look at those of jobs asking for more than one). */
  const placedJobs = new Map<string, JobView>();
  const quotas = new RunningQuotas(state.qos, state.runningUse);
  /** Tasks placed first, in room kept for them (taskKey): the queue's turn skips them. */
  const placedFirst = new Set<string>();
  /** Cpus placed first per owner, counted into the owner's share when its turns come. */
  const placedCpus = new Map<string, number>();
  /** Tasks of throttled arrays placed in this pass (stages/throttle.ts). */
  const throttle = new ArrayThrottle();

  // Room a preemption kept goes to its task once the stopped task has freed it.
  for (const reserved of state.reserved ?? []) {
    const room = capacity.get(reserved.host);
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
    totalSlotsFree += Math.max(0, room.slotsFree) - before;
    placedJobs.set(job.id, job);
    place.push({
      kind: "task",
      jobId: job.id,
      taskIndex: reserved.taskIndex,
      host: reserved.host,
      reserved: true,
    });
    placedFirst.add(taskKey(job.id, reserved.taskIndex));
    quotas.add(job);
    throttle.placed(job);
    const owner = job.owner ?? "";
    placedCpus.set(owner, (placedCpus.get(owner) ?? 0) + job.cpus);
  }
  const exhausted = new ExhaustedBatches();
  /** Feasible hosts per batch key: jobs alike in resources and requirements share the answer. */
  const feasibleByKey = new Map<string, HostView[]>();
  const feasibleFor = (job: FeasibilityJob, key = batchKey(job)): HostView[] => {
    let feasible = feasibleByKey.get(key);
    if (!feasible) {
      feasible = state.hosts.filter((host) => capacity.has(host.name) && infeasibility(job, host) === null);
      feasibleByKey.set(key, feasible);
    }
    return feasible;
  };

  /**
   * Feasible hosts scored by the job's rank, shared by jobs alike in batch and rank (100,000
   * single-task jobs of one kind are scored once a pass, not once each).
   */
  const scoredByKey = new Map<string, Scored>();
  const score = (job: JobView, key: string): Scored => {
    const scored = scoreHosts(job, feasibleFor(job, key));
    return { scored, rooms: scored.map((each) => capacity.get(each.host.name)!) };
  };
  const scoredFor = (job: JobView, key: string): Scored => {
    const shared = scoreKey(job, key);
    if (shared === null) return score(job, key);
    let scored = scoredByKey.get(shared);
    if (!scored) {
      scored = score(job, key);
      scoredByKey.set(shared, scored);
    }
    return scored;
  };

  const policy = policyOf(state.policy);

  /** Takes a host's room away from everything behind the gang that reserved it. */
  const withhold = (name: string) => {
    const room = capacity.get(name);
    if (!room) return;
    totalSlotsFree -= Math.max(0, room.slotsFree);
    room.slotsFree = 0;
    room.memoryFreeMb = 0;
  };

  /** Places a gang's ranks all at once, or none; a gang past its reserve time holds hosts as they free up. */
  const placeGang = (cursor: JobCursor, gang: NonNullable<JobView["gang"]>): boolean => {
    const { job } = cursor;
    if (!cursor.scored) {
      ({ scored: cursor.scored, rooms: cursor.rooms } = scoredFor(job, cursor.key));
      cursor.tasks = tasksToPlace(job, state.now);
    }
    const next = cursor.tasks!.next();
    if (next.done) return false;
    const restartPool = gang.restartPool ?? policy.restartPool;
    const needs = { ...gang, restartPool, ...needOf(job, next.value.index) };
    const ranks = chooseGangHosts(needs, cursor.scored, capacity);
    if (!ranks) {
      const reserving = gangMayReserve(job.readySince ?? job.createdAt, state.now, policy.gangReserveSeconds);
      if (reserving) for (const name of reserveGangHosts(needs, cursor.scored, capacity)) withhold(name);
      trace.unplaced?.(
        job,
        `its ${gang.nodes} ranks find no room at once${reserving ? ": hosts are held for it as they free up" : ""}`,
      );
      return false;
    }
    for (const name of ranks) {
      takeRoom(capacity.get(name)!, needs);
      totalSlotsFree -= job.cpus;
    }
    placedJobs.set(job.id, job);
    place.push({ kind: "gang", jobId: job.id, taskIndex: next.value.index, host: ranks[0], ranks });
    return true;
  };

  /** Places the job's next task; false when the job has nothing more to place in this pass. */
  const placeNext = (cursor: JobCursor): boolean => {
    const { job, key } = cursor;
    if (job.gang && job.gang.nodes > 1) return placeGang(cursor, job.gang);
    const throttled = throttle.reason(job);
    if (throttled) {
      trace.unplaced?.(job, throttled);
      return false;
    }
    if (exhausted.has(key)) {
      trace.unplaced?.(job, "work alike ahead of it found no room in this pass");
      return false;
    }
    if (!cursor.scored) {
      const feasible = feasibleFor(job, key);
      if (feasible.length === 0) {
        exhausted.add(key);
        trace.unplaced?.(job, "no host that takes work matches it");
        return false;
      }
      cursor.shared = scoredFor(job, key);
      ({ scored: cursor.scored, rooms: cursor.rooms } = cursor.shared);
      cursor.tasks = tasksToPlace(job, state.now);
    }
    for (;;) {
      const next = cursor.tasks!.next();
      if (next.done) return false;
      if (placedFirst.size > 0 && placedFirst.has(taskKey(job.id, next.value.index))) continue;
      const need = needOf(job, next.value.index);
      // Tasks of the batch's own need (almost all) ask the shared queue; the others look at every host.
      const best =
        need === job && !next.value.allows
          ? fitQueueOf(cursor.shared!, need).best()
          : bestFitScan(cursor.scored, cursor.rooms!, need, next.value.allows);
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
          if (rule.lapsesAt !== undefined)
            plan.recheckAt = Math.min(plan.recheckAt ?? rule.lapsesAt, rule.lapsesAt);
        }
        if (next.value.allows || need !== job) continue;
        exhausted.add(key);
        trace.unplaced?.(job, "no host it matches has room left in this pass");
        return false;
      }
      takeRoom(cursor.rooms![best], need);
      totalSlotsFree -= job.cpus;
      placedJobs.set(job.id, job);
      place.push({
        kind: "task",
        jobId: job.id,
        taskIndex: next.value.index,
        host: cursor.scored[best].host.name,
      });
      throttle.placed(job);
      return true;
    }
  };

  const queues = state.ownerQueues?.() ?? ownerQueuesOf(state.jobs);
  /**
   * Owners all of whose jobs are held for the rest of the pass (their group at its cpu limit): their
   * queues are left where they are, unread. Only when no one asks why each job waits (explain walks
   * them, each held alike): the plan is the same either way.
   */
  const heldOwners = new Set<string>();
  while (totalSlotsFree > 0) {
    // The next band: the highest tier priority at the head of an owner's queue.
    let band = Number.NEGATIVE_INFINITY;
    for (const queue of queues) {
      if (heldOwners.has(queue.owner)) continue;
      const head = queue.peek();
      if (head && (head.qosPriority ?? 0) > band) band = head.qosPriority ?? 0;
    }
    if (band === Number.NEGATIVE_INFINITY) break;
    const inBand = (job: JobView | null) => job !== null && (job.qosPriority ?? 0) === band;
    const lanes: Lane[] = [];
    for (const queue of queues)
      if (!heldOwners.has(queue.owner) && inBand(queue.peek())) {
        const share = state.owners?.get(queue.owner) ?? NO_SHARE;
        const cpus = placedCpus.get(queue.owner) ?? 0;
        const counted = cpus === 0 ? share : { ...share, runningCpus: share.runningCpus + cpus };
        lanes.push({ share: counted, queue, cursor: null });
      }
    while (lanes.length > 0 && totalSlotsFree > 0) {
      const turn = nextTurn(lanes);
      const lane = lanes[turn];
      const job = lane.queue.peek()!;
      trace.turn?.(job);
      const limited = quotas.held(job);
      if (limited) trace.unplaced?.(job, limited);
      else lane.cursor ??= { job, key: batchKey(job), scored: null, rooms: null, shared: null, tasks: null };
      if (!limited && placeNext(lane.cursor!)) {
        quotas.add(job);
        const cpus = job.cpus * Math.max(1, job.gang?.nodes ?? 1);
        lane.share = { ...lane.share, runningCpus: lane.share.runningCpus + cpus };
      } else {
        lane.cursor = null;
        if (limited && !trace.unplaced && quotas.ownerHeld(lane.queue.owner)) {
          heldOwners.add(lane.queue.owner);
          lanes.splice(turn, 1);
          continue;
        }
        lane.queue.advance();
        // The jobs behind a held one are most often held for the same limit: they are passed over
        // here, not one turn each (a turn weighs every lane). Alike either way: what a pass holds
        // only grows, so a job held now would be held at its turn, and it places nothing.
        if (limited) {
          for (let next = lane.queue.peek(); inBand(next); next = lane.queue.peek()) {
            const why = quotas.held(next!);
            if (why === null) break;
            trace.unplaced?.(next!, why);
            lane.queue.advance();
          }
        }
        if (!inBand(lane.queue.peek())) lanes.splice(turn, 1);
      }
    }
  }
  // Slots still idle may take replicas of running tasks (OurGrid), never a slot pending work could use.
  if (totalSlotsFree > 0) {
    const { now, jobs, hosts, replicable: running = [] } = state;
    place.push(...placeReplicas({ now, jobs, hosts, placed: place, placedJobs, capacity, running, quotas }));
  }

  if (state.running) {
    const running = lazyRunning(state.running);
    if (policy.preempt) {
      const placed = new Set(place.map((each) => taskKey(each.jobId, each.taskIndex)));
      const decided = preemptionPass(state, placed, feasibleFor, capacity, running, policy, trace, (job) =>
        quotas.held(job),
      );
      plan.preempt.push(...decided.preempt);
      plan.stop.push(...decided.stop);
      if (decided.recheckAt !== undefined)
        plan.recheckAt = Math.min(plan.recheckAt ?? decided.recheckAt, decided.recheckAt);
    }
    if (policy.reschedule && totalSlotsFree > 0) {
      plan.stop.push(...reschedulingPass(state, feasibleFor, capacity, running(), policy, trace));
    }
  }
  return plan;
}

/** The live attempts, built once and only when a stage asks. */
function lazyRunning(build: () => readonly RunningTaskView[]): () => readonly RunningTaskView[] {
  let running: readonly RunningTaskView[] | null = null;
  return () => {
    running ??= build();
    return running;
  };
}

/** Each owner's jobs in queue order, from jobs in queue order (a state without the queue's own lists). */
function ownerQueuesOf(jobs: Iterable<JobView>): OwnerQueue[] {
  const byOwner = new Map<string, JobView[]>();
  let last: JobView[] | null = null;
  let lastOwner: string | null = null;
  for (const job of jobs) {
    const owner = job.owner ?? "";
    // Runs of one owner's jobs (the common queue) need no lookup.
    let list: JobView[] | null | undefined = owner === lastOwner ? last : byOwner.get(owner);
    if (!list) {
      list = [];
      byOwner.set(owner, list);
    }
    list.push(job);
    last = list;
    lastOwner = owner;
  }
  return [...byOwner].map(([owner, list]) => {
    let next = 0;
    return {
      owner,
      peek: () => list[next] ?? null,
      advance: () => {
        next++;
      },
    };
  });
}

/**
 * What one task of the job takes of a host: the job's resources, with the task's own memory when a
 * retry after running out of memory grew it (retry.memoryGrowth). The job itself when they agree.
 */
export function needOf(job: JobView, taskIndex: number): Need {
  const memoryMb = job.taskMemoryMb?.(taskIndex);
  return memoryMb === undefined || memoryMb === job.memoryMb ? job : { ...job, memoryMb };
}

/**
 * The lane whose turn it is, by the order of turns (queue-order.ts compareTurns) between the jobs
 * at the lanes' heads, each owner's share counting this pass's placements: within a band, the
 * owner with the smallest share, then the job submitted first.
 */
function nextTurn(lanes: readonly Lane[]): number {
  let best = 0;
  for (let i = 1; i < lanes.length; i++) {
    const a = lanes[i];
    const b = lanes[best];
    if (compareTurns(a.queue.peek()!, b.queue.peek()!, a.share, b.share) < 0) best = i;
  }
  return best;
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

/** Feasible hosts scored for a job, with the room left on each (the same order). */
interface Scored {
  scored: ScoredHost[];
  rooms: Capacity[];
  /** The best host for the batch's own need, made at the first task that has it. */
  queue?: FitQueue;
}

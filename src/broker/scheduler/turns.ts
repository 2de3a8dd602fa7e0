// The queue's walk in a pass: whose turn it is. Jobs come in bands of QoS tier priority (qos.ts),
// highest first. Within a band, owners take turns by fair share (fair-share.ts): each turn goes to
// the owner with the highest fair-share factor, then the fewest cpus running, counting what this
// pass has placed, ties to the job submitted first; inside an owner's lane, jobs go by job
// priority, then submit order: the order of turns is queue-order.ts compareTurns. A job that
// places nothing more leaves its lane to the next of its owner's jobs; one that places a task keeps
// its turn order with its owner's share grown by it.

import { NO_SHARE, type OwnerShare } from "./fair-share.ts";
import { compareOwnersTurns } from "./queue-order.ts";
import type { JobView, OwnerQueue, PassTrace, SchedulerState } from "./view.ts";

/**
 * An owner's jobs of one QoS band, in queue order, and the owner's standing as the pass goes. The
 * cursor of the job whose turn it is is made when needed: a queue of 100,000 jobs with four free
 * slots makes four cursors, not 100,000, and the owner's queue is read no further than that.
 */
export interface Lane<Cursor> {
  share: OwnerShare;
  queue: OwnerQueue;
  /** The job at the head of the queue, whose turn the lane's turn is (the queue's peek, kept). */
  head: JobView;
  cursor: Cursor | null;
}

/** What the walk asks of the running limits (qos.ts RunningQuotas). */
export interface RunningLimits {
  /** Why the job's next placement must wait for a running limit, or null. */
  held(job: JobView): string | null;
  /** Whether every job of the owner is held for the rest of the pass. */
  ownerHeld(owner: string): boolean;
}

/** The turns of one pass over the queue, lane by lane; `Cursor`: what a job's turn keeps between turns. */
export class QueueTurns<Cursor> {
  readonly #queues: OwnerQueue[];
  readonly #owners: ReadonlyMap<string, OwnerShare> | undefined;
  /** Cpus placed per owner before the queue's turns (room kept by preemptions), counted into their shares. */
  readonly #placedCpus: ReadonlyMap<string, number>;
  readonly #running: RunningLimits;
  readonly #trace: PassTrace;
  /**
   * Owners all of whose jobs are held for the rest of the pass (their group at its cpu limit): their
   * queues are left where they are, unread. Only when no one asks why each job waits (explain walks
   * them, each held alike): the plan is the same either way.
   */
  readonly #heldOwners = new Set<string>();
  /** The lanes of the band whose turns go on. */
  #lanes: Lane<Cursor>[] = [];
  /** The tier priority of that band. */
  #band = Number.NEGATIVE_INFINITY;
  /** The index of the lane whose turn it is. */
  #turn = 0;

  constructor(
    state: SchedulerState,
    placedCpus: ReadonlyMap<string, number>,
    running: RunningLimits,
    trace: PassTrace,
  ) {
    this.#queues = state.ownerQueues?.() ?? ownerQueuesOf(state.jobs);
    this.#owners = state.owners;
    this.#placedCpus = placedCpus;
    this.#running = running;
    this.#trace = trace;
  }

  /** The lane whose turn it is (its head is the job), or null when no job is left. */
  next(): Lane<Cursor> | null {
    if (this.#lanes.length === 0 && !this.#openBand()) return null;
    this.#turn = nextTurn(this.#lanes);
    return this.#lanes[this.#turn];
  }

  /** The job at the head of the turn's lane placed a task (or its gang): its owner's share grows by it. */
  placed(job: JobView): void {
    const lane = this.#lanes[this.#turn];
    const cpus = job.cpus * Math.max(1, job.gang?.nodes ?? 1);
    lane.share = { ...lane.share, runningCpus: lane.share.runningCpus + cpus };
  }

  /** The job at the head of the turn's lane places nothing more in this pass: its owner's next job comes. */
  passed(): void {
    const lane = this.#lanes[this.#turn];
    lane.cursor = null;
    lane.queue.advance();
    this.#moveOn(lane);
  }

  /**
   * The job at the head of the turn's lane is held by a running limit of its user or group
   * (stages/limit.ts). Its owner's jobs behind it are held alike when their group is at its cpu
   * limit; else those that the same limits hold are passed over here, not one turn each.
   */
  held(): void {
    const lane = this.#lanes[this.#turn];
    lane.cursor = null;
    if (!this.#trace.unplaced && this.#running.ownerHeld(lane.queue.owner)) {
      this.#heldOwners.add(lane.queue.owner);
      this.#lanes.splice(this.#turn, 1);
      return;
    }
    lane.queue.advance();
    // The jobs behind a held one are most often held for the same limit: they are passed over
    // here, not one turn each (a turn weighs every lane). Alike either way: what a pass holds
    // only grows, so a job held now would be held at its turn, and it places nothing.
    for (let next = lane.queue.peek(); this.#inBand(next); next = lane.queue.peek()) {
      const why = this.#running.held(next!);
      if (why === null) break;
      this.#trace.unplaced?.(next!, why);
      lane.queue.advance();
    }
    this.#moveOn(lane);
  }

  /** The lane's next job takes the head, or the lane leaves the band with none left in it. */
  #moveOn(lane: Lane<Cursor>): void {
    const next = lane.queue.peek();
    if (this.#inBand(next)) lane.head = next!;
    else this.#lanes.splice(this.#turn, 1);
  }

  /** The next band: the highest tier priority at the head of an owner's queue, with its lanes; false when none is left. */
  #openBand(): boolean {
    let band = Number.NEGATIVE_INFINITY;
    for (const queue of this.#queues) {
      if (this.#heldOwners.has(queue.owner)) continue;
      const head = queue.peek();
      if (head && (head.qosPriority ?? 0) > band) band = head.qosPriority ?? 0;
    }
    if (band === Number.NEGATIVE_INFINITY) return false;
    this.#band = band;
    for (const queue of this.#queues) {
      const head = queue.peek();
      if (!this.#heldOwners.has(queue.owner) && this.#inBand(head)) {
        const share = this.#owners?.get(queue.owner) ?? NO_SHARE;
        const cpus = this.#placedCpus.get(queue.owner) ?? 0;
        const counted = cpus === 0 ? share : { ...share, runningCpus: share.runningCpus + cpus };
        this.#lanes.push({ share: counted, queue, head: head!, cursor: null });
      }
    }
    return true;
  }

  #inBand(job: JobView | null): boolean {
    return job !== null && (job.qosPriority ?? 0) === this.#band;
  }
}

/**
 * The lane whose turn it is, by the order of turns (queue-order.ts compareTurns) between the jobs
 * at the lanes' heads, each owner's share counting this pass's placements. The lanes are of one
 * band and one owner each: of that order, compareOwnersTurns alone tells them apart (the owner
 * with the smallest share, then the job submitted first).
 */
function nextTurn<Cursor>(lanes: readonly Lane<Cursor>[]): number {
  let best = 0;
  for (let i = 1; i < lanes.length; i++) {
    const a = lanes[i];
    const b = lanes[best];
    if (compareOwnersTurns(a.head, b.head, a.share, b.share) < 0) best = i;
  }
  return best;
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

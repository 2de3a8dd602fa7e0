// Replicas (OurGrid's MyGrid, workqueue with replication): once every pending task that could be
// placed in this pass has been, slots still idle take extra attempts of running tasks of jobs with
// `replicas: k`, up to k attempts of a task at once, each on a host that runs no other attempt of
// it. Tasks whose best attempt runs on the slowest host go first (they gain most from a faster
// one); a replica goes to the job's best-ranked host, then the fastest. A replica never takes a
// host that a pending task left unplaced could use, so replication only ever fills slots that
// would otherwise stay idle. The first replica to succeed wins (reactor/handlers/attempts.ts).

import { batchKey } from "../batches.ts";
import type { Placement, ReplicaPlacement } from "../plan.ts";
import type { RunningQuotas } from "../qos.ts";
import { compareSubmitOrder } from "../queue-order.ts";
import type { HostView, JobView, RunningTask } from "../view.ts";
import { infeasibility } from "./feasibility.ts";
import { type Capacity, fitsCapacity, takeRoom } from "./fit.ts";
import { type ScoredHost, scoreHosts } from "./rank.ts";

export interface ReplicaInput {
  now: number;
  /** The queued jobs with ready work, as the pass saw them. */
  jobs: Iterable<JobView>;
  hosts: readonly HostView[];
  /** What the pass has placed so far. */
  placed: readonly Placement[];
  /** The jobs of those placements by id. */
  placedJobs: ReadonlyMap<string, JobView>;
  /** Free capacity left on each host that takes work (changed as replicas are placed). */
  capacity: Map<string, Capacity>;
  /** Running tasks of jobs with replicas. */
  running: readonly RunningTask[];
  /** The running limits of the QoS tiers and groups (qos.ts): a replica holds cpus like any attempt. */
  quotas: Pick<RunningQuotas, "held" | "add">;
}

/** A task that may get replicas in this pass, with the hosts its attempts hold (growing). */
interface Candidate {
  job: JobView;
  taskIndex: number;
  hosts: string[];
}

export function placeReplicas(input: ReplicaInput): ReplicaPlacement[] {
  const { capacity } = input;
  const idle = new Set<string>();
  for (const [name, room] of capacity) if (room.slotsFree > 0) idle.add(name);
  const candidates = candidatesOf(input);
  if (candidates.length === 0) return [];
  for (const name of hostsPendingWorkCouldUse(input, idle)) idle.delete(name);
  if (idle.size === 0) return [];

  const byName = new Map(input.hosts.map((host) => [host.name, host]));
  const speed = (name: string) => byName.get(name)?.facts.speed ?? 0;
  /** The speed of a task's best attempt: an unknown host counts as the slowest. */
  const bestSpeed = (candidate: Candidate) => Math.max(0, ...candidate.hosts.map(speed));
  /** The idle hosts each job may use, scored by its rank (jobs alike in placement share them). */
  const scoredByJob = new Map<JobView, ScoredHost[]>();
  const scored = (job: JobView) => {
    let list = scoredByJob.get(job);
    if (!list) {
      const feasible = [...idle]
        .map((name) => byName.get(name)!)
        .filter((host) => infeasibility(job, host) === null);
      list = scoreHosts(job, feasible);
      scoredByJob.set(job, list);
    }
    return list;
  };

  const place: ReplicaPlacement[] = [];
  // Round by round, one replica per task, so that every slow task gets one before any gets two.
  for (let placedInRound = true; placedInRound; ) {
    placedInRound = false;
    // Then by QoS band and submit order: a job's own priority does not reach other users' tasks.
    candidates.sort(
      (a, b) =>
        bestSpeed(a) - bestSpeed(b) ||
        (b.job.qosPriority ?? 0) - (a.job.qosPriority ?? 0) ||
        compareSubmitOrder(a.job, b.job) ||
        a.taskIndex - b.taskIndex,
    );
    for (const candidate of candidates) {
      const { job, taskIndex, hosts } = candidate;
      if (!mayReplicate(job, taskIndex, hosts.length)) continue;
      if (input.quotas.held(job)) continue;
      let best: ScoredHost | null = null;
      for (const option of scored(job)) {
        const name = option.host.name;
        if (hosts.includes(name) || !fitsCapacity(job, capacity.get(name)!)) continue;
        if (!best || compareTargets(option, best, capacity) < 0) best = option;
      }
      if (!best) continue;
      const room = capacity.get(best.host.name)!;
      takeRoom(room, job);
      hosts.push(best.host.name);
      place.push({ kind: "replica", jobId: job.id, taskIndex, host: best.host.name });
      input.quotas.add(job);
      placedInRound = true;
    }
  }
  return place;
}

function mayReplicate(job: JobView, taskIndex: number, live: number): boolean {
  return job.mayReplicate ? job.mayReplicate(taskIndex, live) : live < (job.replicas ?? 1);
}

/** The better target first: higher rank, then the faster host, then the one with more free slots, then by name. */
function compareTargets(a: ScoredHost, b: ScoredHost, capacity: ReadonlyMap<string, Capacity>): number {
  if (a.rank !== b.rank) return b.rank > a.rank ? 1 : -1;
  const faster = b.host.facts.speed - a.host.facts.speed;
  if (faster !== 0) return faster;
  const roomier = capacity.get(b.host.name)!.slotsFree - capacity.get(a.host.name)!.slotsFree;
  if (roomier !== 0) return roomier;
  return a.host.name < b.host.name ? -1 : a.host.name > b.host.name ? 1 : 0;
}

/** Running tasks, and tasks this pass has just placed, of jobs that ask for more than one replica. */
function candidatesOf(input: ReplicaInput): Candidate[] {
  const candidates = new Map<string, Candidate>();
  const add = (job: JobView, taskIndex: number, hosts: readonly string[]) => {
    const key = `${job.id}\u0000${taskIndex}`;
    const known = candidates.get(key);
    if (known) for (const host of hosts) known.hosts.push(host);
    else candidates.set(key, { job, taskIndex, hosts: [...hosts] });
  };
  for (const task of input.running) {
    if ((task.job.replicas ?? 1) > 1) add(task.job, task.taskIndex, task.hosts);
  }
  for (const placement of input.placed) {
    const job = input.placedJobs.get(placement.jobId);
    if (job && (job.replicas ?? 1) > 1) add(job, placement.taskIndex, [placement.host]);
  }
  return [...candidates.values()];
}

/**
 * The idle hosts that a ready task this pass left unplaced could use (it is feasible there, though
 * it found no room): a replica there would hold a slot that task is waiting for.
 */
function hostsPendingWorkCouldUse(input: ReplicaInput, idle: ReadonlySet<string>): Set<string> {
  const wanted = new Set<string>();
  const placed = new Set(input.placed.map((placement) => `${placement.jobId}\u0000${placement.taskIndex}`));
  const isPlaced = (job: JobView, index: number) => placed.has(`${job.id}\u0000${index}`);
  const hosts = input.hosts.filter((host) => idle.has(host.name));
  /** Feasible idle hosts per batch key: jobs alike in placement share the answer. */
  const feasibleByKey = new Map<string, HostView[]>();
  const feasible = (job: JobView) => {
    const key = batchKey(job);
    let list = feasibleByKey.get(key);
    if (!list) {
      list = hosts.filter((host) => infeasibility(job, host) === null);
      feasibleByKey.set(key, list);
    }
    return list;
  };
  for (const job of input.jobs) {
    for (const task of job.constrainedTasks?.(input.now) ?? []) {
      if (isPlaced(job, task.index)) continue;
      for (const host of feasible(job)) if (task.allows(host.name)) wanted.add(host.name);
    }
    // Ready tasks are placed in order, so the first one not placed is found after the placed ones.
    for (const index of job.readyTasks(input.now)) {
      if (isPlaced(job, index)) continue;
      for (const host of feasible(job)) wanted.add(host.name);
      break;
    }
    if (wanted.size === idle.size) break;
  }
  return wanted;
}

// Scheduling latency "with a slot free": of the time a job waited between its acceptance and its
// first attempt's placement, the part during which a slot was free for it. Jobs go first come,
// first served, so at time t the job at position p among those waiting has a slot if the attempts
// running at t plus the p jobs waiting ahead of it leave one of the `slots` free. Waiting for a
// slot is capacity; waiting with one free is the scheduler's own delay.

export interface JobTimes {
  /** When the job was accepted (ms). */
  createdAt: number;
  /** When its first attempt was placed (ms). */
  startedAt: number;
  /** When that attempt ended (ms); null while it runs. */
  endedAt: number | null;
}

/** For each job (in the order given, which must be the order of acceptance), its wait with a slot free (ms). */
export function waitsWithSlotFree(jobs: readonly JobTimes[], slots: number): number[] {
  // At one instant: ends first (they free a slot), then acceptances, then starts.
  type Edge = { at: number; kind: 0 | 1 | 2; job: number }; // 0 end, 1 accept, 2 start
  const edges: Edge[] = [];
  jobs.forEach((job, index) => {
    edges.push({ at: job.createdAt, kind: 1, job: index });
    edges.push({ at: job.startedAt, kind: 2, job: index });
    if (job.endedAt !== null) edges.push({ at: job.endedAt, kind: 0, job: index });
  });
  edges.sort((a, b) => a.at - b.at || a.kind - b.kind || a.job - b.job);
  const waits = new Array<number>(jobs.length).fill(0);
  const waiting: number[] = []; // in acceptance order
  let running = 0;
  let last = edges.length > 0 ? edges[0].at : 0;
  for (const edge of edges) {
    const span = edge.at - last;
    if (span > 0) {
      // Only the first (slots - running) waiting jobs have a slot free.
      const free = Math.min(waiting.length, Math.max(0, slots - running));
      for (let i = 0; i < free; i++) waits[waiting[i]] += span;
    }
    last = edge.at;
    if (edge.kind === 1) insertInOrder(waiting, edge.job);
    else if (edge.kind === 2) {
      const at = waiting.indexOf(edge.job);
      if (at >= 0) waiting.splice(at, 1);
      running++;
    } else running--;
  }
  return waits;
}

function insertInOrder(list: number[], value: number): void {
  let i = list.length;
  while (i > 0 && list[i - 1] > value) i--;
  list.splice(i, 0, value);
}

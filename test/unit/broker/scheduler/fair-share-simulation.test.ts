// Fair share over a recorded workload: the pure scheduler (scheduler/schedule.ts) with the owners'
// usage and factors as the server keeps them (state/owner-usage.ts), a simulated clock, no
// processes. Run times come from the LCG-2005-1 grid trace (bench/workloads), capped at two hours
// so that a few multi-day jobs do not decide a three-day run. Four users always have work queued:
// physics (3 shares: alice and bob, 1 each) and biology (1 share: carol and dave, 1 each). Over
// the run the accounts' CPU time comes within 5 % of 3:1, and each account's two users within 5 %
// of each other; a user with no usage who submits mid-run (named in the tree, or named nowhere)
// is served at the next free slot.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { describe, expect, it } from "vitest";
import { attemptCpuSeconds } from "../../../../src/broker/scheduler/fair-share.ts";
import { compareQueueOrder } from "../../../../src/broker/scheduler/queue-order.ts";
import { schedule } from "../../../../src/broker/scheduler/schedule.ts";
import type { HostView, JobView } from "../../../../src/broker/scheduler/view.ts";
import { OwnerUsage } from "../../../../src/broker/state/owner-usage.ts";
import { parseSharesFile } from "../../../../src/common/model/shares-file.ts";

const TRACE = join(import.meta.dirname, "../../../../bench/workloads/LCG-2005-1.swf.gz");
const TRACE_JOBS = 20_000;
const CAP_SECONDS = 2 * 3600;
const HOSTS = 8;
const SLOTS = 8;
const RUN_MS = 3 * 86_400_000;
/** When the newcomers submit, and how many one-cpu tasks each. */
const NEWCOMER_AT = 2 * 86_400_000;
const NEWCOMER_TASKS = 3;

const SHARES = `
accounts:
  physics:
    shares: 3
    users: {alice: 1, bob: 1, frank: 1}
  biology:
    shares: 1
    users: {carol: 1, dave: 1}
`;

/** Run times (s) of the trace's jobs that ran, in submit order (SWF field 4), capped. */
function traceRunTimes(): number[] {
  const text = gunzipSync(readFileSync(TRACE)).toString("utf8");
  const times: number[] = [];
  for (const line of text.split("\n")) {
    if (line.startsWith(";") || line.trim() === "") continue;
    const runSeconds = Number(line.trim().split(/\s+/)[3]);
    if (runSeconds > 0) times.push(Math.min(runSeconds, CAP_SECONDS));
    if (times.length === TRACE_JOBS) break;
  }
  return times;
}

function host(name: string, slotsFree: number): HostView {
  return {
    name,
    state: "ready",
    connected: true,
    slots: SLOTS,
    slotsFree,
    memoryFreeMb: 8192,
    facts: {
      name,
      pool: "default",
      os: "linux",
      arch: "x86_64",
      cpus: SLOTS,
      memoryMb: 8192,
      memFreeMb: 8192,
      load1: 0,
      cpuFree: 1,
      diskFreeMb: 1000,
      speed: 1,
      labels: {},
      slotsFree,
    },
  };
}

/** A user's queue as one array job: tasks start in index order, `limit` of them in all. */
interface Queue {
  view: JobView;
  next: number;
  limit: number;
}

function queue(owner: string, seq: number, limit: number, createdAt = 0): Queue {
  const entry: Queue = { next: 0, limit, view: undefined as unknown as JobView };
  entry.view = {
    id: `job-${owner}`,
    owner,
    priority: 0,
    createdAt,
    seq,
    cpus: 1,
    memoryMb: 0,
    requirements: null,
    rank: null,
    *readyTasks() {
      for (let index = entry.next; index < entry.limit; index++) yield index;
    },
  };
  return entry;
}

interface Running {
  owner: string;
  host: string;
  key: string;
  startedAt: number;
  endsAt: number;
}

interface Outcome {
  cpuSeconds: Record<string, number>;
  /** Owners of the placements made in the first pass after the newcomers submitted. */
  firstAfterNewcomers: string[];
  /** When each newcomer's first task started (ms), and when they submitted. */
  newcomerStarts: Record<string, number>;
  passes: number;
}

function simulate(): Outcome {
  const runTimes = traceRunTimes();
  const usage = new OwnerUsage({ tree: parseSharesFile(SHARES) });
  const users = ["alice", "bob", "carol", "dave"];
  const queues = new Map(users.map((user, index) => [user, queue(user, index + 1, Number.MAX_SAFE_INTEGER)]));
  const slotsFree = new Map<string, number>();
  for (let i = 0; i < HOSTS; i++) slotsFree.set(`h${i}`, SLOTS);
  const running: Running[] = [];
  const cpuSeconds: Record<string, number> = {};
  const charge = (owner: string, seconds: number) => {
    cpuSeconds[owner] = (cpuSeconds[owner] ?? 0) + seconds;
  };
  let firstAfterNewcomers: string[] = [];
  const newcomerStarts: Record<string, number> = {};
  let newcomersIn = false;
  let passes = 0;
  // Each user's n-th task takes the trace's run times in turn, the users interleaved.
  const runTimeOf = (owner: string, index: number) =>
    runTimes[(index * users.length + users.indexOf(owner)) % runTimes.length] * 1000;

  let now = 0;
  for (;;) {
    let newcomerPass = false;
    if (!newcomersIn && now >= NEWCOMER_AT) {
      newcomersIn = true;
      newcomerPass = true;
      // frank is named in physics and has used nothing; erin is named nowhere (a leaf under the root).
      queues.set("frank", queue("frank", 10, NEWCOMER_TASKS, now));
      queues.set("erin", queue("erin", 11, NEWCOMER_TASKS, now));
    }
    passes++;
    const jobs = [...queues.values()]
      .filter((each) => each.next < each.limit)
      .map((each) => each.view)
      .sort(compareQueueOrder);
    const hosts = [...slotsFree].map(([name, free]) => host(name, free));
    const plan = schedule({ now, jobs, hosts, owners: usage.shares(now) });
    const placedOwners: string[] = [];
    for (const placement of plan.place) {
      const owner = placement.jobId.slice("job-".length);
      const entry = queues.get(owner)!;
      entry.next = Math.max(entry.next, placement.taskIndex + 1);
      slotsFree.set(placement.host, slotsFree.get(placement.host)! - 1);
      const key = `${owner}/${placement.taskIndex}`;
      const runMs = owner === "frank" || owner === "erin" ? 600_000 : runTimeOf(owner, placement.taskIndex);
      running.push({ owner, host: placement.host, key, startedAt: now, endsAt: now + runMs });
      usage.started(owner, 1, key, now);
      placedOwners.push(owner);
      if ((owner === "frank" || owner === "erin") && newcomerStarts[owner] === undefined)
        newcomerStarts[owner] = now;
    }
    if (newcomersIn && firstAfterNewcomers.length === 0 && placedOwners.length > 0 && !newcomerPass)
      firstAfterNewcomers = placedOwners;
    if (newcomerPass && placedOwners.length > 0) firstAfterNewcomers = placedOwners;
    // The next end (every attempt that ends then).
    let next = Number.POSITIVE_INFINITY;
    for (const attempt of running) next = Math.min(next, attempt.endsAt);
    if (!newcomersIn) next = Math.min(next, NEWCOMER_AT);
    if (next >= RUN_MS) break;
    now = next;
    for (let i = running.length - 1; i >= 0; i--) {
      const attempt = running[i];
      if (attempt.endsAt !== now) continue;
      running.splice(i, 1);
      slotsFree.set(attempt.host, slotsFree.get(attempt.host)! + 1);
      usage.stopped(attempt.owner, 1, attempt.key);
      usage.used(attempt.owner, attemptCpuSeconds(1, attempt.startedAt, now, null), now);
      charge(attempt.owner, (now - attempt.startedAt) / 1000);
    }
  }
  // Attempts still running at the end count up to it.
  for (const attempt of running) charge(attempt.owner, (RUN_MS - attempt.startedAt) / 1000);
  return { cpuSeconds, firstAfterNewcomers, newcomerStarts, passes };
}

describe("fair share over the LCG trace: accounts of 3 and 1 shares that both keep the grid busy", () => {
  const outcome = simulate();
  const { cpuSeconds } = outcome;
  const physics = cpuSeconds.alice + cpuSeconds.bob;
  const biology = cpuSeconds.carol + cpuSeconds.dave;

  it("keeps the grid busy", () => {
    const used = Object.values(cpuSeconds).reduce((sum, each) => sum + each, 0);
    expect(used / ((HOSTS * SLOTS * RUN_MS) / 1000)).toBeGreaterThan(0.999);
    expect(outcome.passes).toBeGreaterThan(1000);
  });

  it("gives the accounts CPU time within 5 % of 3:1 over the run", () => {
    console.log(
      `fair share over ${outcome.passes} passes: physics/biology ${(physics / biology).toFixed(3)}, alice/bob ${(cpuSeconds.alice / cpuSeconds.bob).toFixed(3)}, carol/dave ${(cpuSeconds.carol / cpuSeconds.dave).toFixed(3)}`,
    );
    expect(physics / biology).toBeGreaterThan(3 * 0.95);
    expect(physics / biology).toBeLessThan(3 * 1.05);
  });

  it("gives two users of equal shares in one account equal time, within 5 %", () => {
    expect(cpuSeconds.alice / cpuSeconds.bob).toBeGreaterThan(0.95);
    expect(cpuSeconds.alice / cpuSeconds.bob).toBeLessThan(1.05);
    expect(cpuSeconds.carol / cpuSeconds.dave).toBeGreaterThan(0.95);
    expect(cpuSeconds.carol / cpuSeconds.dave).toBeLessThan(1.05);
  });

  it("serves newcomers with no usage first: the next free slots after they submit are theirs", () => {
    expect(outcome.firstAfterNewcomers.length).toBeGreaterThan(0);
    for (const owner of outcome.firstAfterNewcomers) expect(["frank", "erin"]).toContain(owner);
    expect(outcome.newcomerStarts.frank).toBeGreaterThanOrEqual(NEWCOMER_AT);
    expect(outcome.newcomerStarts.erin).toBeGreaterThanOrEqual(NEWCOMER_AT);
  });
});

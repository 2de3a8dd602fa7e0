// The contract monitor as handlers run it, with a clock the test moves (no store, no timers):
// progress from heartbeats is judged as it arrives; a broken contract stops the attempt (migrated,
// with its reason and numbers in the events), its task restarts elsewhere, and the host ranks last
// for the job.

import { beforeEach, describe, expect, it } from "vitest";
import {
  attachHost,
  attemptEnded,
  attemptStarted,
} from "../../../../../src/broker/reactor/handlers/agent-reports.ts";
import { watchContracts } from "../../../../../src/broker/reactor/handlers/contracts.ts";
import { drainHost, holdJob } from "../../../../../src/broker/reactor/handlers/control.ts";
import { submitJob } from "../../../../../src/broker/reactor/handlers/submit.ts";
import { handle } from "../../../../../src/broker/reactor/step.ts";
import type { JobEntry } from "../../../../../src/broker/state/job-entry.ts";
import { validateJobSpec } from "../../../../../src/common/model/job-spec.ts";
import type { HeartbeatMessage } from "../../../../../src/common/protocol/messages.ts";
import { ended, facts, hello } from "../../../../helpers/agent-messages.ts";
import { HandlerBench } from "../../../../helpers/handler-bench.ts";

let bench: HandlerBench;
let nextId = 1;

beforeEach(() => {
  bench = new HandlerBench();
  bench.run((step) => attachHost(step, hello("h1")));
  bench.run((step) => attachHost(step, hello("h2")));
});

/** 0.6 of the job per minute (1 % a second), 5 s of grace. */
const CONTRACT = { minProgressPerMinute: 0.6, graceSeconds: 5 };

function submit(spec: Record<string, unknown>): JobEntry {
  const id = String(nextId++);
  const job = bench.run((step) =>
    submitJob(step, { id, spec: validateJobSpec(spec), owner: "alice", inputs: [] }),
  ).result;
  bench.settle();
  return job;
}

function started(host: string, job: JobEntry, attempt: number): void {
  bench.run((step) => attemptStarted(step, host, { jobId: job.id, taskIndex: 0, attempt }));
}

function submitRunning(spec: Record<string, unknown> = {}): { job: JobEntry; host: string } {
  const job = submit({ command: "sleep 100", contract: CONTRACT, ...spec });
  const start = bench.starts().find((each) => each.jobId === job.id);
  if (!start) throw new Error("the job did not start");
  started(start.host, job, start.attempt);
  return { job, host: start.host };
}

function heartbeat(host: string, progress: HeartbeatMessage["progress"]): void {
  bench.heartbeat(host, facts(host), progress);
}

/** One heartbeat a second from `host` for `seconds`, the attempt's progress going up by `perSecond`. */
function beat(
  host: string,
  job: JobEntry,
  attempt: number,
  from: number,
  perSecond: number,
  seconds: number,
): number {
  let fraction = from;
  for (let i = 0; i < seconds; i++) {
    bench.now += 1000;
    fraction += perSecond;
    heartbeat(host, [{ jobId: job.id, taskIndex: 0, attempt, fraction }]);
  }
  bench.settle();
  return fraction;
}

function reportEnded(host: string, report: ReturnType<typeof ended>): void {
  bench.run((step) => attemptEnded(step, host, report));
  bench.settle();
}

function events(job: JobEntry) {
  return bench.events(job.id);
}

describe("contract monitor", () => {
  it("an attempt faster than its contract is left alone", () => {
    const { job, host } = submitRunning();
    beat(host, job, 1, 0, 0.02, 30);
    expect(bench.stops()).toEqual([]);
    expect(events(job).some((event) => event.kind === "contract.broken")).toBe(false);
  });

  it("a job that writes no progress is not judged", () => {
    const { job, host } = submitRunning();
    for (let i = 0; i < 30; i++) {
      bench.now += 1000;
      heartbeat(host, []);
    }
    bench.settle();
    expect(bench.stops()).toEqual([]);
    expect(job.attempt(0, 1)?.state).toBe("running");
  });

  it("a slow attempt is migrated once it stayed below for the grace, and finishes elsewhere", () => {
    const { job, host } = submitRunning();
    const other = host === "h1" ? "h2" : "h1";
    // 0.1 % a second: 0.06 per minute, a tenth of the contract. Measured below from the second
    // sample on (at 2 s), so the grace of 5 s ends at the seventh.
    const reached = beat(host, job, 1, 0, 0.001, 6);
    expect(bench.stops()).toEqual([]);
    beat(host, job, 1, reached, 0.001, 1);
    expect(bench.stops()).toEqual([
      expect.objectContaining({
        host,
        outcome: "migrated",
        reason: `contract: progress 0.060/min below 0.600/min for 5 s on ${host}`,
      }),
    ]);
    const broken = events(job).find((event) => event.kind === "contract.broken");
    expect(broken?.message).toContain(`attempt 1 broke its contract: progress 0.060/min below 0.600/min`);
    expect(broken?.data).toMatchObject({
      task: 0,
      attempt: 1,
      host,
      minProgressPerMinute: 0.6,
      graceSeconds: 5,
      belowSeconds: 5,
      windowSeconds: 60,
    });
    expect(broken?.data.ratePerMinute as number).toBeCloseTo(0.06, 6);
    expect(job.record.slowHosts).toEqual([host]);

    // The agent stops it (checkpoint uploaded) and reports; the task restarts on the other host.
    bench.effects = [];
    reportEnded(host, ended(job.id, 1, "migrated", { reason: "contract" }));
    expect(bench.starts()).toEqual([expect.objectContaining({ host: other, attempt: 2 })]);
    expect(job.attempt(0, 1)).toMatchObject({ outcome: "migrated", reason: "contract" });
    started(other, job, 2);
    beat(other, job, 2, 0.006, 0.05, 10);
    expect(bench.stops()).toEqual([]);

    // A restart keeps the slow host.
    expect(bench.recovered().jobs.get(job.id)?.slowHosts).toEqual([host]);
  });

  it("an attempt recovering before the grace is over is not stopped, and its clock starts again", () => {
    const { job, host } = submitRunning();
    let fraction = beat(host, job, 1, 0, 0.001, 4); // below from 2 s to 4 s
    fraction = beat(host, job, 1, fraction, 0.2, 2); // 0.404 at 6 s: the rate is back above
    // Stalled from then on: the rate since the first sample (0.001 at 1 s) falls below 0.6/min at
    // 42 s (0.403 over 41 s); the grace ends at 47 s (0.403 over 46 s), not 5 s after the first
    // fall at 2 s.
    fraction = beat(host, job, 1, fraction, 0, 40);
    expect(bench.stops()).toEqual([]);
    expect(job.attempt(0, 1)?.state).toBe("running");
    beat(host, job, 1, fraction, 0, 1);
    expect(bench.stops()).toEqual([
      expect.objectContaining({ reason: `contract: progress 0.526/min below 0.600/min for 5 s on ${host}` }),
    ]);
  });

  it("a restarted attempt gets its grace in full, measured from where it resumed", () => {
    const { job, host } = submitRunning();
    beat(host, job, 1, 0, 0.001, 7);
    expect(bench.stops()).toHaveLength(1);
    bench.effects = [];
    reportEnded(host, ended(job.id, 1, "migrated"));
    const second = bench.starts().find((each) => each.attempt === 2)!;
    started(second.host, job, 2);
    // Resumed at 0.5 and slow too: measured below from its second sample, stopped 5 s later.
    beat(second.host, job, 2, 0.5, 0.001, 6);
    expect(bench.stops()).toEqual([]);
    beat(second.host, job, 2, 0.506, 0.001, 1);
    expect(bench.stops()).toEqual([expect.objectContaining({ host: second.host, attempt: 2 })]);
    expect(job.record.slowHosts.sort()).toEqual(["h1", "h2"]);
  });

  it("an attempt of a job without a contract is never judged", () => {
    const job = submit({ command: "sleep 100" });
    const start = bench.starts()[0];
    started(start.host, job, 1);
    beat(start.host, job, 1, 0, 0, 30);
    expect(bench.stops()).toEqual([]);
    expect(bench.state.watches.size).toBe(0);
  });

  it("while no other host could run the job, a slow attempt stays (said once); it moves once one could", () => {
    bench.run((step) => drainHost(step, "h2"));
    const { job, host } = submitRunning();
    expect(host).toBe("h1");
    beat(host, job, 1, 0, 0.001, 20);
    expect(bench.stops()).toEqual([]);
    const stays = events(job).filter((event) => event.kind === "contract.stays");
    expect(stays).toHaveLength(1);
    expect(stays[0].message).toMatch(
      /^attempt 1 broke its contract: progress 0\.060\/min below 0\.600\/min for 5 s on h1, but no other host can run the job: it stays$/,
    );
    expect(job.record.slowHosts).toEqual([]);
    bench.run((step) => attachHost(step, hello("h3")));
    bench.settle();
    bench.effects = bench.effects.filter((each) => each.kind !== "send" || each.message.type !== "start");
    beat(host, job, 1, 0.02, 0.001, 1);
    expect(bench.stops()).toEqual([
      expect.objectContaining({
        host: "h1",
        outcome: "migrated",
        reason: "contract: progress 0.060/min below 0.600/min for 19 s on h1",
      }),
    ]);
  });

  it("progress from a host the attempt is not on changes nothing", () => {
    const { job, host } = submitRunning();
    const other = host === "h1" ? "h2" : "h1";
    beat(other, job, 1, 0, 0, 20);
    expect(bench.stops()).toEqual([]);
  });

  it("an attempt being stopped is not judged: no event, its host not ranked last", () => {
    const { job, host } = submitRunning();
    bench.run((step) => holdJob(step, job.id));
    bench.effects = [];
    beat(host, job, 1, 0, 0.001, 20);
    expect(events(job).filter((event) => event.kind.startsWith("contract."))).toEqual([]);
    expect(job.record.slowHosts).toEqual([]);
  });

  it("progress whose step was taken back leaves no sample", () => {
    const { job, host } = submitRunning();
    bench.now += 1000;
    expect(() =>
      handle(
        bench.state,
        bench.now,
        (step) => {
          watchContracts(step, host, [{ jobId: job.id, taskIndex: 0, attempt: 1, fraction: 0.01 }]);
          throw new Error("after");
        },
        () => 0.5,
      ),
    ).toThrow("after");
    expect(bench.state.watches.size).toBe(0);
  });

  it("an array's task that stays says so", () => {
    bench.run((step) => drainHost(step, "h2"));
    const { job, host } = submitRunning({ array: { count: 1 } });
    const array = submit({ command: "sleep 100", contract: CONTRACT, array: { count: 2 } });
    for (const start of bench.starts().filter((each) => each.jobId === array.id))
      bench.run((step) => attemptStarted(step, start.host, start));
    for (let i = 0; i < 20; i++) {
      bench.now += 1000;
      heartbeat(host, [
        { jobId: job.id, taskIndex: 0, attempt: 1, fraction: 0.001 * i },
        { jobId: array.id, taskIndex: 0, attempt: 1, fraction: 0.001 * i },
      ]);
    }
    const stays = (each: JobEntry) =>
      events(each)
        .filter((event) => event.kind === "contract.stays")
        .map((event) => event.data.array);
    expect(stays(job)).toEqual([false]);
    expect(stays(array)).toEqual([true]);
  });

  it("a host slow again for the job is ranked last once, not twice", () => {
    const { job, host } = submitRunning({ retry: { maxAttempts: 5, backoffSeconds: 0 } });
    beat(host, job, 1, 0, 0.001, 7);
    reportEnded(host, ended(job.id, 1, "migrated"));
    const second = bench.starts().find((each) => each.attempt === 2)!;
    started(second.host, job, 2);
    beat(second.host, job, 2, 0, 0.001, 7);
    reportEnded(second.host, ended(job.id, 2, "migrated"));
    expect([...job.record.slowHosts].sort()).toEqual(["h1", "h2"]);
    const third = bench.starts().find((each) => each.attempt === 3)!;
    started(third.host, job, 3);
    // Another host could run it now: the third attempt, slow on a host slow before, moves.
    bench.run((step) => attachHost(step, hello("h3")));
    bench.effects = [];
    beat(third.host, job, 3, 0, 0.001, 7);
    expect(bench.stops()).toEqual([expect.objectContaining({ host: third.host, attempt: 3 })]);
    expect([...job.record.slowHosts].sort()).toEqual(["h1", "h2"]);
  });
});

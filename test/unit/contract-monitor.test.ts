// The contract monitor in the reactor, on a real SQLite store with a clock the test moves: progress
// from heartbeats is judged as it arrives; a broken contract stops the attempt (migrated, with its
// reason and numbers in the events), its task restarts elsewhere, and the host ranks last for the job.

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { validateJobSpec } from "../../src/model/job-spec.ts";
import type { JobEntry } from "../../src/state/job-entry.ts";
import { ended, facts, Harness, hello, settle, submitOn } from "../helpers/core-harness.ts";

let harness: Harness;

beforeEach(async () => {
  harness = new Harness();
  await harness.start();
  await harness.core.agents.attachHost(hello("h1"));
  await harness.core.agents.attachHost(hello("h2"));
});

afterEach(async () => {
  await harness.close();
});

/** 0.6 of the job per minute (1 % a second), 5 s of grace. */
const CONTRACT = { minProgressPerMinute: 0.6, graceSeconds: 5 };

async function submitRunning(spec: Record<string, unknown> = {}): Promise<{ job: JobEntry; host: string }> {
  const job = await submitOn(
    harness.core,
    validateJobSpec({ command: "sleep 100", contract: CONTRACT, ...spec }),
    "alice",
    [],
  );
  await settle();
  const start = harness.starts().find((each) => each.jobId === job.id);
  if (!start) throw new Error("the job did not start");
  await harness.core.agents.attemptStarted(start.host, job.id, 0, start.attempt);
  return { job, host: start.host };
}

/** One heartbeat a second from `host` for `seconds`, the attempt's progress going up by `perSecond`. */
async function beat(
  host: string,
  job: JobEntry,
  attempt: number,
  from: number,
  perSecond: number,
  seconds: number,
): Promise<number> {
  let fraction = from;
  for (let i = 0; i < seconds; i++) {
    harness.now += 1000;
    fraction += perSecond;
    await harness.core.heartbeat(host, facts(host), [{ jobId: job.id, taskIndex: 0, attempt, fraction }]);
  }
  await settle();
  return fraction;
}

async function events(job: JobEntry) {
  return harness.store.events(job.id);
}

describe("contract monitor", () => {
  it("an attempt faster than its contract is left alone", async () => {
    const { job, host } = await submitRunning();
    await beat(host, job, 1, 0, 0.02, 30);
    expect(harness.stops()).toEqual([]);
    expect((await events(job)).some((event) => event.kind === "contract.broken")).toBe(false);
  });

  it("a job that writes no progress is not judged", async () => {
    const { job, host } = await submitRunning();
    for (let i = 0; i < 30; i++) {
      harness.now += 1000;
      await harness.core.heartbeat(host, facts(host), []);
    }
    await settle();
    expect(harness.stops()).toEqual([]);
    expect(job.attempt(0, 1)?.state).toBe("running");
  });

  it("a slow attempt is migrated once it stayed below for the grace, and finishes elsewhere", async () => {
    const { job, host } = await submitRunning();
    const other = host === "h1" ? "h2" : "h1";
    // 0.1 % a second: 0.06 per minute, a tenth of the contract. Measured below from the second
    // sample on (at 2 s), so the grace of 5 s ends at the seventh.
    const reached = await beat(host, job, 1, 0, 0.001, 6);
    expect(harness.stops()).toEqual([]);
    await beat(host, job, 1, reached, 0.001, 1);
    expect(harness.stops()).toEqual([
      expect.objectContaining({
        host,
        outcome: "migrated",
        reason: `contract: progress 0.060/min below 0.600/min for 5 s on ${host}`,
      }),
    ]);
    const broken = (await events(job)).find((event) => event.kind === "contract.broken");
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
    harness.sent = [];
    await harness.core.agents.attemptEnded(host, ended(job.id, 1, "migrated", { reason: "contract" }));
    await settle();
    expect(harness.starts()).toEqual([expect.objectContaining({ host: other, attempt: 2 })]);
    expect(job.attempt(0, 1)).toMatchObject({ outcome: "migrated", reason: "contract" });
    await harness.core.agents.attemptStarted(other, job.id, 0, 2);
    await beat(other, job, 2, 0.006, 0.05, 10);
    expect(harness.stops()).toEqual([]);

    // A restart keeps the slow host.
    await harness.restart();
    expect(harness.core.read.job(job.id).slowHosts).toEqual([host]);
  });

  it("an attempt recovering before the grace is over is not stopped, and its clock starts again", async () => {
    const { job, host } = await submitRunning();
    let fraction = await beat(host, job, 1, 0, 0.001, 4); // below from 2 s to 4 s
    fraction = await beat(host, job, 1, fraction, 0.2, 2); // 0.404 at 6 s: the rate is back above
    // Stalled from then on: the rate since the first sample (0.001 at 1 s) falls below 0.6/min at
    // 42 s (0.403 over 41 s); the grace ends at 47 s (0.403 over 46 s), not 5 s after the first
    // fall at 2 s.
    fraction = await beat(host, job, 1, fraction, 0, 40);
    expect(harness.stops()).toEqual([]);
    expect(job.attempt(0, 1)?.state).toBe("running");
    await beat(host, job, 1, fraction, 0, 1);
    expect(harness.stops()).toEqual([
      expect.objectContaining({ reason: `contract: progress 0.526/min below 0.600/min for 5 s on ${host}` }),
    ]);
  });

  it("a restarted attempt gets its grace in full, measured from where it resumed", async () => {
    const { job, host } = await submitRunning();
    await beat(host, job, 1, 0, 0.001, 7);
    expect(harness.stops()).toHaveLength(1);
    harness.sent = [];
    await harness.core.agents.attemptEnded(host, ended(job.id, 1, "migrated"));
    await settle();
    const second = harness.starts().find((each) => each.attempt === 2)!;
    await harness.core.agents.attemptStarted(second.host, job.id, 0, 2);
    // Resumed at 0.5 and slow too: measured below from its second sample, stopped 5 s later.
    await beat(second.host, job, 2, 0.5, 0.001, 6);
    expect(harness.stops()).toEqual([]);
    await beat(second.host, job, 2, 0.506, 0.001, 1);
    expect(harness.stops()).toEqual([expect.objectContaining({ host: second.host, attempt: 2 })]);
    expect(job.record.slowHosts.sort()).toEqual(["h1", "h2"]);
  });

  it("an attempt of a job without a contract is never judged", async () => {
    const job = await submitOn(harness.core, validateJobSpec({ command: "sleep 100" }), "alice", []);
    await settle();
    const start = harness.starts()[0];
    await harness.core.agents.attemptStarted(start.host, job.id, 0, 1);
    await beat(start.host, job, 1, 0, 0, 30);
    expect(harness.stops()).toEqual([]);
    expect(harness.core.reactor.state.watches.size).toBe(0);
  });

  it("while no other host could run the job, a slow attempt stays (said once); it moves once one could", async () => {
    await harness.core.hosts.drain("h2");
    const { job, host } = await submitRunning();
    expect(host).toBe("h1");
    await beat(host, job, 1, 0, 0.001, 20);
    expect(harness.stops()).toEqual([]);
    const stays = (await events(job)).filter((event) => event.kind === "contract.stays");
    expect(stays).toHaveLength(1);
    expect(stays[0].message).toMatch(
      /^attempt 1 broke its contract: progress 0\.060\/min below 0\.600\/min for 5 s on h1, but no other host can run the job: it stays$/,
    );
    expect(job.record.slowHosts).toEqual([]);
    await harness.core.agents.attachHost(hello("h3"));
    harness.sent = harness.sent.filter((each) => each.message.type !== "start");
    await beat(host, job, 1, 0.02, 0.001, 1);
    expect(harness.stops()).toEqual([
      expect.objectContaining({
        host: "h1",
        outcome: "migrated",
        reason: "contract: progress 0.060/min below 0.600/min for 19 s on h1",
      }),
    ]);
  });

  it("progress from a host the attempt is not on changes nothing", async () => {
    const { job, host } = await submitRunning();
    const other = host === "h1" ? "h2" : "h1";
    await beat(other, job, 1, 0, 0, 20);
    expect(harness.stops()).toEqual([]);
  });
});

// The reactor on a real SQLite store (in memory), with a recording link in place of the network:
// fencing, idempotent reports, per-task order, re-attachment and poison tasks.

import { setImmediate as tick } from "node:timers/promises";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { Core } from "../../../../src/broker/server/core.ts";
import { GroupCommitter } from "../../../../src/broker/store/group-commit.ts";
import { SqliteStore } from "../../../../src/broker/store/sqlite.ts";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import type { ServerMessage } from "../../../../src/common/protocol/messages.ts";
import { facts, hello, submitOn } from "../../../helpers/core-harness.ts";

let store: SqliteStore;
let core: Core;
let now: number;
let sent: { host: string; message: ServerMessage }[];
let disconnected: string[];

async function settle() {
  for (let i = 0; i < 5; i++) await tick();
  await new Promise((resolve) => setTimeout(resolve, 5));
}

function starts() {
  return sent
    .filter((entry) => entry.message.type === "start")
    .map((entry) => ({ host: entry.host, ...(entry.message as Extract<ServerMessage, { type: "start" }>) }));
}

beforeEach(async () => {
  store = new SqliteStore(":memory:");
  await store.open();
  now = 1_000_000;
  sent = [];
  disconnected = [];
  core = new Core(new GroupCommitter(store, await store.beginTerm()), {
    heartbeatSeconds: 1,
    hostTimeoutSeconds: 3,
    now: () => now,
    random: () => 0.5,
  });
  core.reactor.setLinks({
    send: (host, message) => {
      sent.push({ host, message });
      return true;
    },
    disconnect: (host) => disconnected.push(host),
  });
  core.recover(await store.load());
});

afterEach(async () => {
  core.reactor.stop();
  await store.close();
});

async function runOne(command = "true") {
  await core.agents.attachHost(hello("h1"));
  const job = await submitOn(core, validateJobSpec({ command }), "alice", []);
  await settle();
  const [start] = starts();
  expect(start).toMatchObject({ host: "h1", jobId: job.id, taskIndex: 0, attempt: 1 });
  return job;
}

const ended = (jobId: string, attempt: number, outcome: "succeeded" | "failed" = "succeeded") => ({
  kind: "ended" as const,
  jobId,
  taskIndex: 0,
  attempt,
  outcome,
  exitCode: outcome === "succeeded" ? 0 : 1,
  reason: null,
  outputs: [],
});

describe("Core", () => {
  it("applies a duplicate end report once", async () => {
    const job = await runOne();
    await core.agents.attemptStarted("h1", job.id, 0, 1);
    await core.agents.attemptEnded("h1", ended(job.id, 1));
    const eventsAfterFirst = (await store.events(job.id)).length;
    await core.agents.attemptEnded("h1", ended(job.id, 1, "failed"));
    expect(job.record.state).toBe("succeeded");
    expect(job.attempts.get(0)).toHaveLength(1);
    expect(job.attempt(0, 1)?.outcome).toBe("succeeded");
    expect((await store.events(job.id)).length).toBe(eventsAfterFirst);
  });

  it("keeps per-task order: a start report after the end changes nothing", async () => {
    const job = await runOne();
    await core.agents.attemptEnded("h1", ended(job.id, 1));
    await core.agents.attemptStarted("h1", job.id, 0, 1);
    expect(job.attempt(0, 1)?.state).toBe("ended");
    const snapshot = await store.load();
    expect(snapshot.attempts[0]).toMatchObject({ state: "ended", outcome: "succeeded" });
  });

  it("declares a silent host lost, restarts its task elsewhere, and fences the late result", async () => {
    const job = await runOne("sleep 100");
    await core.agents.attemptStarted("h1", job.id, 0, 1);
    await core.agents.attachHost(hello("h2"));
    now += 3001;
    core.heartbeat("h2", facts("h2"));
    core.reactor.tick();
    await settle();
    expect(disconnected).toEqual(["h1"]);
    expect(job.attempt(0, 1)).toMatchObject({ state: "ended", outcome: "lost" });
    const restart = starts().at(-1)!;
    expect(restart).toMatchObject({ host: "h2", attempt: 2 });
    // The stale attempt's success is ignored; the task stays with attempt 2.
    await core.agents.attemptEnded("h1", ended(job.id, 1));
    expect(job.tasks[0]).toMatchObject({ state: "running", resultAttempt: null, losses: 1 });
    expect(core.read.isCurrent(job.id, 0, 1)).toBe(false);
    expect(core.read.isCurrent(job.id, 0, 2)).toBe(true);
    // h1 comes back still holding attempt 1: it is told to kill it.
    const { kill } = await core.agents.attachHost(
      hello("h1", [{ jobId: job.id, taskIndex: 0, attempt: 1, state: "running" }]),
    );
    expect(kill).toEqual([{ jobId: job.id, taskIndex: 0, attempt: 1 }]);
    await core.agents.attemptEnded("h2", ended(job.id, 2));
    expect(job.tasks[0]).toMatchObject({ state: "succeeded", resultAttempt: 2 });
  });

  it("re-attaches an attempt its agent still holds, and loses one it does not", async () => {
    const job = await runOne("sleep 100");
    // Its "started" report never came (the agent restarted): the agent's hello says it runs.
    expect(job.attempt(0, 1)?.state).toBe("starting");
    const kept = await core.agents.attachHost(
      hello("h1", [{ jobId: job.id, taskIndex: 0, attempt: 1, state: "running" }]),
    );
    expect(kept.kill).toEqual([]);
    expect(job.attempt(0, 1)?.state).toBe("running");
    await core.agents.attachHost(hello("h1", []));
    expect(job.attempt(0, 1)).toMatchObject({ state: "ended", outcome: "lost" });
  });

  it("recovers running attempts from the store and gives their hosts one host timeout", async () => {
    const job = await runOne("sleep 100");
    await core.agents.attemptStarted("h1", job.id, 0, 1);
    core.reactor.stop();
    const recovered = new Core(new GroupCommitter(store, await store.beginTerm()), {
      heartbeatSeconds: 1,
      hostTimeoutSeconds: 3,
      now: () => now,
    });
    recovered.reactor.setLinks({ send: () => true, disconnect: () => {} });
    recovered.recover(await store.load());
    now += 2000;
    recovered.reactor.tick();
    expect(recovered.read.job(job.id).attempt(0, 1)?.state).toBe("running");
    now += 1500;
    recovered.reactor.tick();
    await settle();
    expect(recovered.read.job(job.id).attempt(0, 1)).toMatchObject({ state: "ended", outcome: "lost" });
    recovered.reactor.stop();
  });

  it("fails a task lost 5 times as a poison task", async () => {
    await core.agents.attachHost(hello("h1"));
    const job = await submitOn(core, validateJobSpec({ command: "sleep 100" }), "alice", []);
    for (let attempt = 1; attempt <= 5; attempt++) {
      await settle();
      expect(job.latestAttempt(0)?.number).toBe(attempt);
      await core.agents.attachHost(hello("h1", []));
    }
    expect(job.tasks[0]).toMatchObject({ state: "failed", losses: 5 });
    expect(job.record.state).toBe("failed");
    expect(
      (await store.events(job.id)).some((event) => event.message.includes("poison task: lost 5 times")),
    ).toBe(true);
  });

  it("explains what keeps a job waiting: dependencies, back-off, hold", async () => {
    await core.agents.attachHost(hello("h1"));
    const first = await submitOn(
      core,
      validateJobSpec({ command: "exit 1", retry: { maxAttempts: 2, backoffSeconds: 30 } }),
      "alice",
      [],
    );
    const second = await submitOn(
      core,
      validateJobSpec({ command: "true", dependsOn: [first.id] }),
      "alice",
      [],
    );
    await settle();
    expect((await core.read.explain(second.id)).reasons).toEqual([
      `waiting for its dependency ${first.id} (running) to succeed`,
    ]);
    await core.agents.attemptEnded("h1", ended(first.id, 1, "failed"));
    expect((await core.read.explain(first.id)).reasons).toEqual([
      "1 task back off after a failure (the last for 30.0 s more)",
    ]);
    await core.jobs.hold(second.id);
    expect((await core.read.explain(second.id)).reasons[0]).toBe(
      "held by a user: `steward release` puts it back in the queue",
    );
    // Held, it has room but does not start: the next pass does not look at it.
    const held = await core.read.explain(second.id);
    expect(held.hosts).toEqual([{ host: "h1", eligible: true, reason: "matches and has room" }]);
    expect(held.nextPass).toEqual({
      starts: [],
      preempts: null,
      line: "the next pass does not look at it: no task of it is queued ready to start",
    });
  });
});

describe("explain's next pass", () => {
  it("a ready job on a cluster whose only host drains: no host that takes work has a free slot", async () => {
    await core.agents.attachHost(hello("h1"));
    await core.hosts.drain("h1");
    const job = await submitOn(core, validateJobSpec({ command: "true" }), "alice", []);
    await settle();
    expect(starts()).toEqual([]);
    expect((await core.read.explain(job.id)).nextPass.line).toBe(
      "the next pass does not start it: no host that takes work has a free slot",
    );
  });
});

describe("a host whose work folder is full", () => {
  it("takes no new work, explain says why, and gets the job as soon as a heartbeat says it has room again", async () => {
    await core.agents.attachHost(hello("h1"));
    const full = facts("h1", { diskFull: true, diskFreeMb: 3, diskMinFreeMb: 256 });
    await core.heartbeat("h1", full);
    const job = await submitOn(core, validateJobSpec({ command: "true" }), "alice", []);
    await settle();
    expect(starts()).toEqual([]);
    expect((await core.read.explain(job.id)).hosts).toEqual([
      {
        host: "h1",
        eligible: false,
        reason: "host's work folder is full: 3 MB free, under the 256 MB its agent keeps free",
      },
    ]);
    // Still full: nothing moves. Room again: no discovery is due, the heartbeat itself wakes the scheduler.
    await core.heartbeat("h1", full);
    await settle();
    expect(starts()).toEqual([]);
    await core.heartbeat("h1", facts("h1", { diskFull: false, diskFreeMb: 900, diskMinFreeMb: 256 }));
    await settle();
    expect(starts()).toMatchObject([{ host: "h1", jobId: job.id, attempt: 1 }]);
  });
});

describe("usage accounting", () => {
  const usage = { wallSeconds: 4, cpuUserSeconds: 1.5, cpuSystemSeconds: 0.5, peakMemoryMb: 20, oomKills: 0 };

  it("keeps the usage an ended report carries on the attempt, charges its CPU time to fair share, and keeps it after removal", async () => {
    const job = await runOne();
    now += 4000;
    await core.agents.attemptEnded("h1", { ...ended(job.id, 1), usage });
    await settle();
    const kept = { userSeconds: 1.5, systemSeconds: 0.5, peakMemoryMb: 20, wallSeconds: 4 };
    expect((await store.loadJob(job.id))?.attempts[0].usage).toStrictEqual(kept);
    // 2 CPU-seconds measured, not 1 cpu held for 4 s.
    expect(core.reactor.state.owners.share("alice", now).recentCpuSeconds).toBeCloseTo(2, 9);
    await core.jobs.remove(job.id);
    expect(await store.loadJob(job.id)).toBeNull();
    const rows = await store.accounting({ since: 0, limit: 10 });
    expect(rows.map((row) => [row.jobId, row.owner, row.usage])).toStrictEqual([[job.id, "alice", kept]]);
  });

  it("a report without usage (an agent of an earlier version) leaves it null, and fair share counts cpus held", async () => {
    const job = await runOne();
    now += 4000;
    await core.agents.attemptEnded("h1", ended(job.id, 1));
    await settle();
    expect((await store.loadJob(job.id))?.attempts[0].usage).toBeNull();
    expect(core.reactor.state.owners.share("alice", now).recentCpuSeconds).toBeCloseTo(4, 9);
  });

  it("the purge drops the rows of removed jobs older than --accounting-days, and keeps the others", async () => {
    const old = await runOne();
    await core.agents.attemptEnded("h1", { ...ended(old.id, 1), usage });
    await settle();
    await core.jobs.remove(old.id);
    now += 365 * 86_400_000;
    const recent = await submitOn(core, validateJobSpec({ command: "true" }), "alice", []);
    await settle();
    await core.agents.attemptEnded("h1", { ...ended(recent.id, 1), usage });
    await settle();
    await core.jobs.remove(recent.id);
    now += 1;
    await core.purgeAccounting();
    expect((await store.accounting({ since: 0, limit: 10 })).map((row) => row.jobId)).toStrictEqual([
      recent.id,
    ]);
  });
});

// Ended jobs leave memory (issue: a long history): once the commit that ended a job is durable,
// its entry goes and its header stays; its tasks and attempts are read from the store when asked
// for, and a restart reads only the live jobs whole. Real SQLite store, recording link.

import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ConflictError } from "../../../../src/broker/reactor/errors.ts";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import { ended, Harness, hello, settle, submitOn } from "../../../helpers/core-harness.ts";

let harness: Harness;

beforeEach(async () => {
  harness = new Harness();
  await harness.start();
});

afterEach(async () => {
  await harness.close();
});

async function runToEnd(command = "true", outcome: "succeeded" | "failed" = "succeeded", submitKey?: string) {
  const core = harness.core;
  const job = await submitOn(core, validateJobSpec({ command }), "alice", [], undefined, submitKey ?? null);
  await settle();
  const start = harness.starts().find((each) => each.jobId === job.id);
  if (!start) throw new Error(`job ${job.id} did not start`);
  await core.agents.attemptStarted(start.host, job.id, 0, start.attempt);
  harness.now += 10_000;
  await core.agents.attemptEnded(start.host, ended(job.id, start.attempt, outcome));
  return job.id;
}

describe("ended jobs", () => {
  beforeEach(async () => {
    await harness.core.agents.attachHost(hello("h1"));
  });

  it("leave memory once their end is durable, keeping a header; the rest is read from the store", async () => {
    const core = harness.core;
    const id = await runToEnd();
    expect(core.read.findJob(id)).toBeUndefined();
    expect(core.reactor.state.ended.get(id)).toMatchObject({
      id,
      owner: "alice",
      state: "succeeded",
      taskCount: 1,
      counts: { pending: 0, running: 0, succeeded: 1, failed: 0, cancelled: 0 },
    });
    const job = await core.read.readJob(id);
    expect(job.record.state).toBe("succeeded");
    expect(job.attempt(0, 1)).toMatchObject({ host: "h1", state: "ended", outcome: "succeeded" });
    expect(core.read.listJobs().map((each) => [each.id, each.state])).toStrictEqual([[id, "succeeded"]]);
    // The jobs in memory only (what a listing of jobs not ended reads), and the counts /metrics shows.
    const pending = await submitOn(
      core,
      validateJobSpec({ command: "true", requirements: 'host.name == "nowhere"' }),
      "alice",
      [],
    );
    expect(core.read.listJobs(false).map((each) => each.id)).toStrictEqual([pending.id]);
    expect(Object.fromEntries(core.read.jobCountsByState())).toEqual({ succeeded: 1, pending: 1 });
    expect(core.read.jobOwner(id)).toBe("alice");
  });

  it("show their summary and one task, and answer controls, without reading the job whole", async () => {
    const core = harness.core;
    const id = await runToEnd("true", "failed");
    expect(core.read.findJob(id)).toBeUndefined();
    const wholeReads = vi.spyOn(harness.store, "loadJob");
    const head = await core.read.readJobHead(id);
    expect(head.header).toMatchObject({ id, state: "failed", taskCount: 1, counts: { failed: 1 } });
    expect(head.record).toMatchObject({ id, owner: "alice", state: "failed" });
    expect(head.record.spec.command).toBe("true");
    const task = await core.read.readTask(id, 0);
    expect(task.task).toMatchObject({ jobId: id, index: 0, state: "failed" });
    expect(task.attempts).toMatchObject([{ number: 1, host: "h1", outcome: "failed" }]);
    expect(task.progress).toBeUndefined();
    await expect(core.read.readTask(id, 1)).rejects.toThrow(`job ${id} has no task 1`);
    expect(await core.read.readTaskStates(id)).toStrictEqual(["failed"]);
    await expect(core.read.readTaskStates("nope")).rejects.toThrow("no job nope");
    await expect(core.read.readJobHead("nope")).rejects.toThrow("no job nope");
    await expect(core.read.readTask("nope", 0)).rejects.toThrow("no job nope");
    // The controls that answer an ended job as it is answer it the same way.
    expect((await core.jobs.cancel(id, "alice")).header.state).toBe("failed");
    expect((await core.jobs.cancelTasks(id, [0], "alice")).record.id).toBe(id);
    await expect(core.jobs.cancelTasks(id, [1], "alice")).rejects.toThrow(
      `job ${id} has one task (0): no task 1`,
    );
    expect((await core.jobs.release(id, "alice")).header.counts.failed).toBe(1);
    expect(wholeReads).not.toHaveBeenCalled();
    // A job in memory answers the same from its entry.
    const live = await submitOn(
      core,
      validateJobSpec({ command: "sleep 9", requirements: 'host.name == "x"' }),
      "bob",
      [],
    );
    expect((await core.read.readJobHead(live.id)).header).toMatchObject({ id: live.id, state: "pending" });
    expect((await core.read.readTask(live.id, 0)).task.state).toBe("pending");
    await expect(core.read.readTask(live.id, 1)).rejects.toThrow(`job ${live.id} has no task 1`);
    expect(await core.read.readTaskStates(live.id)).toStrictEqual(["pending"]);
  });

  it("still release the jobs that depend on them, and answer controls as ended jobs do", async () => {
    const core = harness.core;
    const first = await runToEnd();
    const second = await submitOn(
      core,
      validateJobSpec({ command: "true", dependsOn: [first] }),
      "alice",
      [],
    );
    expect(second.record.state).not.toBe("waiting");
    expect((await core.jobs.cancel(first)).record.state).toBe("succeeded");
    await expect(core.jobs.hold(first)).rejects.toBeInstanceOf(ConflictError);
    await expect(core.jobs.migrate(first, null)).rejects.toBeInstanceOf(ConflictError);
    await expect(core.jobs.update(first, { priority: 3 })).rejects.toThrow(
      new ConflictError(`job ${first} is succeeded: an ended job cannot be updated (submit it again)`),
    );
    // A late report of its attempt changes nothing.
    await core.agents.attemptEnded("h1", ended(first, 1, "failed"));
    expect((await core.read.readJob(first)).attempt(0, 1)?.outcome).toBe("succeeded");
  });

  it("answer a repeated submit with the same key, and go whole with rm", async () => {
    const core = harness.core;
    const id = await runToEnd("true", "succeeded", "key-1");
    const again = await submitOn(core, validateJobSpec({ command: "true" }), "alice", [], undefined, "key-1");
    expect(again.id).toBe(id);
    await core.jobs.remove(id);
    expect(core.read.header(id)).toBeUndefined();
    expect(await harness.store.loadJob(id)).toBeNull();
    await expect(core.read.readJob(id)).rejects.toThrow(`no job ${id}`);
  });

  it("come back from a restart as headers, with the same fair-share usage", async () => {
    const done = await runToEnd("true", "failed");
    const running = await submitOn(harness.core, validateJobSpec({ command: "sleep 100" }), "bob", []);
    await settle();
    const before = harness.core.reactor.state.owners.shares(harness.now);
    const core = await harness.restart();
    expect(core.read.findJob(done)).toBeUndefined();
    expect(core.read.header(done)).toMatchObject({ state: "failed", counts: { failed: 1 } });
    expect(core.read.findJob(running.id)?.record.state).toBe("running");
    const after = core.reactor.state.owners.shares(harness.now);
    expect(after.get("bob")).toStrictEqual(before.get("bob"));
    // Summed by the minute of their end: within a minute's decay (2^(-1/1440)) of the exact figure.
    const exact = before.get("alice")?.recentCpuSeconds ?? 0;
    expect(exact).toBeGreaterThan(9);
    expect(Math.abs((after.get("alice")?.recentCpuSeconds ?? 0) - exact)).toBeLessThan(exact * 0.001);
  });
});

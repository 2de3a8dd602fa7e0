// Replicas through the reactor, on a real SQLite store: a replica takes an idle slot, the first to
// succeed gives the task its one result, the others are stopped `cancelled` and whatever they say
// afterwards changes nothing; a failing replica leaves the task to the others.

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { JobEntry } from "../../../../../src/broker/state/job-entry.ts";
import { validateJobSpec } from "../../../../../src/common/model/job-spec.ts";
import type { HelloMessage } from "../../../../../src/common/protocol/messages.ts";
import { ended, facts, Harness, hello, settle, submitOn } from "../../../../helpers/core-harness.ts";

/** The reason a winning replica stops the others with (model/stop-reasons.ts, kind `replica-lost`). */
const REPLICA_LOST_REASON = "replica lost the race";

let harness: Harness;

beforeEach(async () => {
  harness = new Harness();
  await harness.start();
});

afterEach(async () => {
  await harness.close();
});

/** A host with one slot and a speed score. */
function host(name: string, speed: number, attempts: HelloMessage["attempts"] = []): HelloMessage {
  return { ...hello(name, attempts, 1), facts: facts(name, { speed, slotsFree: 1 }) };
}

const succeeded = (jobId: string, attempt: number) => ({ ...ended(jobId, attempt), outputs: ["out"] });

async function events(job: JobEntry): Promise<string[]> {
  return (await harness.store.events(job.id)).map((event) => event.message);
}

/**
 * A job with `replicas: 2` running on `slow` (the only host when it was placed), then a replica on
 * `fast` once `fast` joins.
 */
async function replicated(spec: Record<string, unknown> = {}): Promise<JobEntry> {
  const { core } = harness;
  await core.agents.attachHost(host("slow", 0.1));
  const job = await submitOn(
    core,
    validateJobSpec({ command: "work", outputs: ["out"], replicas: 2, ...spec }),
    "alice",
    [],
  );
  await settle();
  expect(harness.starts()).toEqual([expect.objectContaining({ host: "slow", jobId: job.id, attempt: 1 })]);
  await core.agents.attemptStarted("slow", job.id, 0, 1);
  await core.agents.attachHost(host("fast", 4));
  await settle();
  expect(harness.starts()).toEqual([
    expect.objectContaining({ host: "slow", attempt: 1 }),
    expect.objectContaining({ host: "fast", jobId: job.id, taskIndex: 0, attempt: 2 }),
  ]);
  await core.agents.attemptStarted("fast", job.id, 0, 2);
  return job;
}

describe("replicas through the reactor", () => {
  it("a job whose losing replica is still stopping stays in memory until that replica ends", async () => {
    const job = await replicated();
    const { core } = harness;
    await core.agents.attemptEnded("fast", succeeded(job.id, 2));
    expect(job.record.state).toBe("succeeded");
    expect(core.read.findJob(job.id)).toBe(job);
    // A restart meanwhile brings it back whole (its attempt is not ended), not as a header.
    const restarted = await harness.restart();
    expect(restarted.read.findJob(job.id)?.attempt(0, 1)?.state).toBe("stopping");
    await restarted.agents.attachHost(
      host("slow", 0.1, [{ jobId: job.id, taskIndex: 0, attempt: 1, state: "running" }]),
    );
    await restarted.agents.attemptEnded(
      "slow",
      ended(job.id, 1, "cancelled", { reason: REPLICA_LOST_REASON }),
    );
    expect(restarted.read.findJob(job.id)).toBeUndefined();
    expect(restarted.read.header(job.id)?.state).toBe("succeeded");
    expect((await restarted.read.readJob(job.id)).attempt(0, 1)).toMatchObject({
      state: "ended",
      outcome: "cancelled",
    });
  });

  it("an idle host gets a replica of the running task; the task stays running and is counted once", async () => {
    const job = await replicated();
    expect(job.liveAttempts(0).map((attempt) => [attempt.number, attempt.host, attempt.state])).toEqual([
      [1, "slow", "running"],
      [2, "fast", "running"],
    ]);
    expect(job.tasks[0]).toMatchObject({ state: "running", attempts: 2 });
    expect(job.counts).toMatchObject({ pending: 0, running: 1 });
    expect(job.record.state).toBe("running");
    expect(await events(job)).toContain("replica 2 of task 0 placed on fast (attempt 2)");
  });

  it("the first to succeed wins; the other is stopped cancelled and its late success changes nothing", async () => {
    const job = await replicated();
    const { core } = harness;
    await core.agents.attemptEnded("fast", succeeded(job.id, 2));
    expect(job.tasks[0]).toMatchObject({ state: "succeeded", resultAttempt: 2 });
    expect(job.record.state).toBe("succeeded");
    expect(harness.stops()).toEqual([
      expect.objectContaining({
        host: "slow",
        jobId: job.id,
        attempt: 1,
        outcome: "cancelled",
        reason: REPLICA_LOST_REASON,
      }),
    ]);
    // The loser may not store outputs any more (it is still live until it reports its end).
    expect(core.read.isCurrent(job.id, 0, 1)).toBe(true);
    expect(core.read.acceptsOutputs(job.id, 0, 1)).toBe(false);
    // It finished before the stop reached it, and says it succeeded: it lost the race all the same.
    await core.agents.attemptEnded("slow", succeeded(job.id, 1));
    expect(job.attempt(0, 1)).toMatchObject({
      state: "ended",
      outcome: "cancelled",
      reason: REPLICA_LOST_REASON,
      exitCode: 0,
    });
    expect(job.tasks[0]).toMatchObject({ state: "succeeded", resultAttempt: 2 });
    expect(job.counts).toMatchObject({ running: 0, succeeded: 1 });
    expect(await events(job)).toContain("attempt 1 on slow cancelled (exit 0): replica lost the race");
    // The same holds in the store.
    const snapshot = await harness.store.load();
    expect(snapshot.tasks[0]).toMatchObject({ state: "succeeded", resultAttempt: 2 });
    expect(snapshot.attempts.find((attempt) => attempt.number === 1)).toMatchObject({
      outcome: "cancelled",
      reason: REPLICA_LOST_REASON,
    });
    // No replica follows a task that has its result.
    await settle();
    expect(harness.starts()).toHaveLength(2);
  });

  it("a loser stopped as told ends cancelled with the reason it was sent", async () => {
    const job = await replicated();
    await harness.core.agents.attemptEnded("slow", succeeded(job.id, 1));
    expect(job.tasks[0]).toMatchObject({ state: "succeeded", resultAttempt: 1 });
    await harness.core.agents.attemptEnded(
      "fast",
      ended(job.id, 2, "cancelled", { reason: REPLICA_LOST_REASON }),
    );
    expect(job.attempt(0, 2)).toMatchObject({ outcome: "cancelled", reason: REPLICA_LOST_REASON });
    expect(job.tasks[0].resultAttempt).toBe(1);
  });

  it("a loser whose output upload was refused (reported lost) ends cancelled, not lost", async () => {
    const job = await replicated();
    await harness.core.agents.attemptEnded("slow", succeeded(job.id, 1));
    await harness.core.agents.attemptEnded(
      "fast",
      ended(job.id, 2, "lost", { reason: "staging outputs failed: HTTP 409", cause: "staging" }),
    );
    expect(job.attempt(0, 2)).toMatchObject({ outcome: "cancelled", reason: REPLICA_LOST_REASON });
    expect(job.tasks[0]).toMatchObject({ state: "succeeded", resultAttempt: 1, systemFailures: 0 });
  });

  it("a replica that fails while another runs does not fail the task", async () => {
    const job = await replicated();
    await harness.core.agents.attemptEnded("fast", ended(job.id, 2, "failed"));
    expect(job.tasks[0]).toMatchObject({ state: "running", failures: 1, notBefore: null });
    expect(job.record.state).toBe("running");
    expect(await events(job)).toContain(
      "attempt 2 on fast failed (exit 1): failed (1 of 1 attempts used); 1 other replica still running",
    );
    // The retry budget (1 attempt) is used up: the failed replica is not replaced.
    await settle();
    expect(harness.starts()).toHaveLength(2);
    await harness.core.agents.attemptEnded("slow", succeeded(job.id, 1));
    expect(job.tasks[0]).toMatchObject({ state: "succeeded", resultAttempt: 1 });
    expect(job.record.state).toBe("succeeded");
  });

  it("the task fails when its last replica fails with the retry budget used up", async () => {
    const job = await replicated();
    await harness.core.agents.attemptEnded("fast", ended(job.id, 2, "failed"));
    await harness.core.agents.attemptEnded("slow", ended(job.id, 1, "failed"));
    expect(job.tasks[0]).toMatchObject({ state: "failed", failures: 2, resultAttempt: null });
    expect(job.record.state).toBe("failed");
  });

  it("with retry budget left, a failed replica is replaced (MyGrid retries failed replicas)", async () => {
    const job = await replicated({ retry: { maxAttempts: 3, backoffSeconds: 0 } });
    await harness.core.agents.attemptEnded("fast", ended(job.id, 2, "failed"));
    await settle();
    expect(harness.starts().at(-1)).toMatchObject({ host: "fast", attempt: 3 });
    expect(await events(job)).toContain("replica 2 of task 0 placed on fast (attempt 3)");
    await harness.core.agents.attemptEnded("fast", ended(job.id, 3, "failed"));
    await settle();
    expect(harness.starts().at(-1)).toMatchObject({ host: "fast", attempt: 4 });
    // The third failure uses the budget up: no more replicas, but the task still runs on slow.
    await harness.core.agents.attemptEnded("fast", ended(job.id, 4, "failed"));
    await settle();
    expect(harness.starts()).toHaveLength(4);
    expect(job.tasks[0]).toMatchObject({ state: "running", failures: 3 });
    await harness.core.agents.attemptEnded("slow", ended(job.id, 1, "failed"));
    expect(job.tasks[0]).toMatchObject({ state: "failed", failures: 4 });
  });

  it("a replica lost with its host leaves the task to the other", async () => {
    const job = await replicated();
    harness.now += 3001;
    harness.core.heartbeat("slow", facts("slow", { speed: 0.1 }));
    harness.core.reactor.tick();
    await settle();
    expect(job.attempt(0, 2)).toMatchObject({ state: "ended", outcome: "lost" });
    expect(job.tasks[0]).toMatchObject({ state: "running", losses: 1 });
    await harness.core.agents.attemptEnded("slow", succeeded(job.id, 1));
    expect(job.tasks[0]).toMatchObject({ state: "succeeded", resultAttempt: 1 });
  });

  it("pending work takes an idle slot before a replica does", async () => {
    const { core } = harness;
    await core.agents.attachHost(host("slow", 0.1));
    const job = await submitOn(core, validateJobSpec({ command: "work", replicas: 2 }), "alice", []);
    const other = await submitOn(core, validateJobSpec({ command: "other" }), "alice", []);
    await settle();
    await core.agents.attachHost(host("fast", 4));
    await settle();
    expect(harness.starts().map((start) => [start.jobId, start.host])).toEqual([
      [job.id, "slow"],
      [other.id, "fast"],
    ]);
    // Once the other job is done, its slot goes to a replica.
    await core.agents.attemptEnded("fast", ended(other.id, 1));
    await settle();
    expect(harness.starts().at(-1)).toMatchObject({ jobId: job.id, host: "fast", attempt: 2 });
  });

  it("with both hosts idle at submit, the task and its replica start in one pass", async () => {
    const { core } = harness;
    await core.agents.attachHost(host("slow", 0.1));
    await core.agents.attachHost(host("fast", 4));
    const job = await submitOn(core, validateJobSpec({ command: "work", replicas: 2 }), "alice", []);
    await settle();
    expect(harness.starts().map((start) => [start.attempt, start.host])).toEqual([
      [1, "fast"],
      [2, "slow"],
    ]);
    expect(job.counts).toMatchObject({ pending: 0, running: 1 });
  });

  it("a held job's replicas are all stopped and none is added", async () => {
    const job = await replicated();
    await harness.core.jobs.hold(job.id);
    expect(harness.stops().map((stop) => [stop.attempt, stop.outcome, stop.reason])).toEqual([
      [1, "preempted", "held"],
      [2, "preempted", "held"],
    ]);
    await harness.core.agents.attemptEnded("fast", ended(job.id, 2, "preempted", { reason: "held" }));
    await settle();
    expect(harness.starts()).toHaveLength(2);
    expect(job.tasks[0].state).toBe("running");
    await harness.core.agents.attemptEnded("slow", ended(job.id, 1, "preempted", { reason: "held" }));
    expect(job.tasks[0]).toMatchObject({ state: "pending", failures: 0 });
    expect(job.record.state).toBe("held");
  });

  it("a cancelled job's task ends cancelled once its last replica has stopped", async () => {
    const job = await replicated();
    await harness.core.jobs.cancel(job.id);
    await harness.core.agents.attemptEnded(
      "slow",
      ended(job.id, 1, "cancelled", { reason: "cancelled by user" }),
    );
    expect(job.tasks[0].state).toBe("running");
    await harness.core.agents.attemptEnded(
      "fast",
      ended(job.id, 2, "cancelled", { reason: "cancelled by user" }),
    );
    expect(job.tasks[0].state).toBe("cancelled");
    expect(job.record.state).toBe("cancelled");
  });

  it("both replicas survive a server restart and the race goes on", async () => {
    const job = await replicated();
    const core = await harness.restart();
    const attempt = (number: number) => ({
      jobId: job.id,
      taskIndex: 0,
      attempt: number,
      state: "running" as const,
    });
    expect((await core.agents.attachHost(host("slow", 0.1, [attempt(1)]))).kill).toEqual([]);
    expect((await core.agents.attachHost(host("fast", 4, [attempt(2)]))).kill).toEqual([]);
    const recovered = core.read.job(job.id);
    expect(recovered.liveAttempts(0)).toHaveLength(2);
    expect(recovered.counts).toMatchObject({ running: 1 });
    harness.sent = [];
    await core.agents.attemptEnded("fast", succeeded(job.id, 2));
    expect(harness.stops()).toEqual([
      expect.objectContaining({
        host: "slow",
        attempt: 1,
        outcome: "cancelled",
        reason: REPLICA_LOST_REASON,
      }),
    ]);
    expect(recovered.tasks[0]).toMatchObject({ state: "succeeded", resultAttempt: 2 });
  });
});

// Reports of one host that arrive together are applied in their order as one step, on a real
// SQLite store: one commit for all, each report doing what it would do alone (a report of an
// attempt the host does not run changes nothing and the others stand).

import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import type { StartedEvent } from "../../../../src/common/protocol/messages.ts";
import { ended, Harness, hello, settle, submitOn } from "../../../helpers/core-harness.ts";

let harness: Harness;

beforeEach(async () => {
  harness = new Harness();
  await harness.start();
});

afterEach(async () => {
  await harness.close();
});

function started(jobId: string, taskIndex: number, attempt = 1): StartedEvent {
  return { kind: "started", jobId, taskIndex, attempt, pid: 100 + taskIndex };
}

/** A three-task array on one host of four slots, all three started by the server. */
async function threeStarted() {
  const { core } = harness;
  await core.agents.attachHost(hello("h", [], 4));
  const job = await submitOn(core, validateJobSpec({ command: "work", array: { count: 3 } }), "alice");
  await settle();
  expect(harness.starts().map((start) => start.taskIndex)).toEqual([0, 1, 2]);
  return job;
}

async function stored(jobId: string) {
  const job = await harness.store.loadJob(jobId);
  if (!job) throw new Error(`job ${jobId} not in the store`);
  return {
    tasks: job.tasks.map((task) => task.state),
    attempts: job.attempts.map((attempt) => `${attempt.taskIndex}:${attempt.state}:${attempt.outcome}`),
  };
}

describe("a host's reports applied together", () => {
  it("applies each as it would be alone, durable together", async () => {
    const job = await threeStarted();
    const commit = vi.spyOn(harness.store, "commit");
    const errors = await harness.core.agents.attemptReports("h", [
      started(job.id, 0),
      started(job.id, 1),
      ended(job.id, 1, "succeeded", { taskIndex: 0 }),
      ended(job.id, 1, "failed", { taskIndex: 1 }),
      started(job.id, 2),
    ]);
    expect(errors).toEqual([null, null, null, null, null]);
    // In one transaction: the three attempts, each written once (a started and ended attempt's two
    // puts are one row write, at its last state: group-commit.ts coalesces them).
    expect(commit).toHaveBeenCalled();
    const first = commit.mock.calls[0][1];
    const puts = first.flatMap((change) => (change.op === "putAttempt" ? [change.attempt] : []));
    expect(puts.map((attempt) => `${attempt.taskIndex}:${attempt.state}`).sort()).toEqual([
      "0:ended",
      "1:ended",
      "2:running",
    ]);
    expect(await stored(job.id)).toEqual({
      tasks: ["succeeded", "failed", "running"],
      attempts: ["0:ended:succeeded", "1:ended:failed", "2:running:null"],
    });
    // The state in memory says the same.
    expect(job.tasks.map((task) => task.state)).toEqual(["succeeded", "failed", "running"]);
  });

  it("an end before its start in the same batch ends the attempt; a start after its end changes nothing", async () => {
    const job = await threeStarted();
    const errors = await harness.core.agents.attemptReports("h", [
      ended(job.id, 1, "succeeded", { taskIndex: 0 }),
      started(job.id, 0),
    ]);
    expect(errors).toEqual([null, null]);
    expect((await stored(job.id)).attempts[0]).toBe("0:ended:succeeded");
  });

  it("a report of an attempt the host does not run changes nothing, and the others stand", async () => {
    const job = await threeStarted();
    await harness.core.agents.attachHost(hello("other", [], 4));
    const errors = await harness.core.agents.attemptReports("other", [started(job.id, 0)]);
    expect(errors).toEqual([null]);
    expect((await stored(job.id)).attempts[0]).toBe("0:starting:null");
    const mixed = await harness.core.agents.attemptReports("h", [
      ended(job.id, 9, "succeeded", { taskIndex: 0 }),
      started(job.id, 7),
      started(job.id, 0),
    ]);
    expect(mixed).toEqual([null, null, null]);
    expect(await stored(job.id)).toEqual({
      tasks: ["running", "running", "running"],
      attempts: ["0:running:null", "1:starting:null", "2:starting:null"],
    });
  });
});

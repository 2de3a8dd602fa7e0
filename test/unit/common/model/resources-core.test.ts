// Countable resources and grown memory in the server's rules, on a real SQLite store: the GPU ids
// given at placement are kept with the attempt, through a server restart, and never given twice on
// a host; an out-of-memory end (cause oom, as data) grows the task's memory for its next attempts.

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import { ended, facts, Harness, hello, settle, submitOn } from "../../../helpers/core-harness.ts";

let harness: Harness;

beforeEach(async () => {
  harness = new Harness();
  await harness.start();
});

afterEach(async () => {
  await harness.close();
});

function gpuHello(attempts: Parameters<typeof hello>[1] = []) {
  return { ...hello("h1", attempts, 4), facts: facts("h1", { gpus: ["0", "1"], resources: { license: 1 } }) };
}

async function submit(spec: Record<string, unknown>) {
  const job = await submitOn(harness.core, validateJobSpec({ command: "sleep 100", ...spec }), "alice", []);
  await settle();
  return job;
}

describe("GPU ids given at placement", () => {
  it("are the attempt's, kept through a server restart, and never given to another live attempt", async () => {
    await harness.core.agents.attachHost(gpuHello());
    const a = await submit({ resources: { gpus: 1, custom: { license: 1 } } });
    expect(harness.starts()).toEqual([
      expect.objectContaining({ jobId: a.id, gpus: ["0"], resources: { license: 1 } }),
    ]);
    await harness.core.agents.attemptStarted("h1", a.id, 0, 1);
    expect((await harness.store.load()).attempts[0].placement).toEqual([
      { host: "h1", rank: 0, gpus: ["0"] },
    ]);

    const core = await harness.restart();
    harness.sent = [];
    await core.agents.attachHost(gpuHello([{ jobId: a.id, taskIndex: 0, attempt: 1, state: "running" }]));
    const b = await submit({ resources: { gpus: 1 } });
    // The license is a's: a job that needs it waits, while one that needs none starts.
    const licensed = await submit({ resources: { custom: { license: 1 } } });
    const c = await submit({ resources: { gpus: 1 } });
    expect(harness.starts()).toEqual([expect.objectContaining({ jobId: b.id, gpus: ["1"] })]);
    expect((await core.read.explain(c.id)).hosts).toEqual([
      expect.objectContaining({ host: "h1", reason: "busy: needs 1 gpu, host has 0 free" }),
    ]);

    harness.sent = [];
    await core.agents.attemptEnded("h1", ended(a.id, 1));
    await settle();
    expect(harness.starts().map((each) => [each.jobId, each.gpus])).toEqual(
      expect.arrayContaining([
        [licensed.id, undefined],
        [c.id, ["0"]],
      ]),
    );
  });
});

describe("memory grown after running out of memory", () => {
  it("grows by memoryGrowth after an oom end only, up to maxMemoryMb, and is placed and started at that size", async () => {
    await harness.core.agents.attachHost(hello("h1"));
    const job = await submit({
      resources: { memoryMb: 100 },
      retry: { maxAttempts: 5, backoffSeconds: 0, memoryGrowth: 2, maxMemoryMb: 300 },
    });
    const oom = { reason: "out of memory: limit N MB reached", cause: "oom" as const };
    const sizes: (number | undefined)[] = [];
    const endAs = async (attempt: number, extra: { reason?: string; cause?: "oom" }) => {
      sizes.push(harness.starts().at(-1)?.memoryMb);
      await harness.core.agents.attemptStarted("h1", job.id, 0, attempt);
      await harness.core.agents.attemptEnded("h1", ended(job.id, attempt, "failed", extra));
      await settle();
    };
    await endAs(1, oom);
    // A failure that is not for memory does not grow it.
    await endAs(2, { reason: "exit code 1" });
    await endAs(3, oom);
    await endAs(4, oom);
    sizes.push(harness.starts().at(-1)?.memoryMb);
    expect(sizes).toEqual([100, 200, 200, 300, 300]);
    expect(job.tasks[0].memoryMb).toBe(300);
    const snapshot = await harness.store.load();
    expect(snapshot.attempts.map((each) => each.memoryMb)).toEqual([null, 200, 200, 300, 300]);
    expect(snapshot.tasks[0].memoryMb).toBe(300);
  });

  it("a grown task that no host has room for waits, and explain says why", async () => {
    await harness.core.agents.attachHost({ ...hello("h1"), facts: facts("h1", { memoryMb: 150 }) });
    const job = await submit({
      resources: { memoryMb: 100 },
      retry: { maxAttempts: 3, backoffSeconds: 0, memoryGrowth: 2 },
    });
    await harness.core.agents.attemptStarted("h1", job.id, 0, 1);
    await harness.core.agents.attemptEnded("h1", ended(job.id, 1, "failed", { cause: "oom" }));
    await settle();
    expect(harness.starts()).toHaveLength(1);
    expect((await harness.core.read.explain(job.id)).nextPass.line).toBe(
      "the next pass does not start it: task 0 needs 200 MB (grown after running out of memory): no host it matches has that free",
    );
  });

  it("without memoryGrowth, an oom end changes nothing", async () => {
    await harness.core.agents.attachHost(hello("h1"));
    const job = await submit({ resources: { memoryMb: 100 }, retry: { maxAttempts: 2, backoffSeconds: 0 } });
    await harness.core.agents.attemptStarted("h1", job.id, 0, 1);
    await harness.core.agents.attemptEnded("h1", ended(job.id, 1, "failed", { cause: "oom" }));
    await settle();
    expect(harness.starts().map((each) => each.memoryMb)).toEqual([100, 100]);
    expect(job.tasks[0].memoryMb).toBeNull();
  });
});

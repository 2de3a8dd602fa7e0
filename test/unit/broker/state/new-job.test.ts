// A new job's entry from its admitted job file: its name, its tasks' and its own state, when it
// ended, its place in the queue and its tier's priority; the state itself is left as it was.

import { describe, expect, it } from "vitest";
import { cancelJob } from "../../../../src/broker/reactor/handlers/control.ts";
import { submitJob } from "../../../../src/broker/reactor/handlers/submit.ts";
import { ClusterState } from "../../../../src/broker/state/cluster-state.ts";
import { newJobEntry } from "../../../../src/broker/state/new-job.ts";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import { parseQosFile } from "../../../../src/common/model/qos-file.ts";
import { HandlerBench } from "../../../helpers/handler-bench.ts";

const NOW = 2_000_000;

/** A state with job 1 pending and job 2 cancelled. */
function state(): ClusterState {
  const b = new HandlerBench(
    new ClusterState({}, parseQosFile("tiers:\n  normal: {}\n  high:\n    priority: 10\n")),
  );
  const spec = validateJobSpec({ command: "true" });
  b.run((step) => submitJob(step, { id: "1", spec, owner: "alice", inputs: [] }));
  b.run((step) => submitJob(step, { id: "2", spec, owner: "alice", inputs: [] }));
  b.run((step) => cancelJob(step, "2"));
  return b.state;
}

const made = (fields: Record<string, unknown>, on = state()) =>
  newJobEntry(
    on,
    { id: "9", spec: validateJobSpec(fields), owner: "alice", inputs: [], submitKey: null, workflow: null },
    NOW,
    42,
  );

describe("newJobEntry", () => {
  it.each<[Record<string, unknown>, string]>([
    [{ command: "true", name: "mine" }, "mine"],
    [{ command: "/usr/bin/env python3 run.py" }, "env"],
    [{ command: ["./bin/simulate", "--fast"] }, "simulate"],
    [{ command: "sleep 10" }, "sleep"],
  ])("names the job %j %s", (fields, name) => {
    expect(made(fields).job.record.name).toBe(name);
  });

  it.each<[string, Record<string, unknown>, string, string[], number | null, boolean]>([
    ["no dependency", { array: { count: 2 } }, "pending", ["pending", "pending"], null, false],
    ["a dependency not yet met", { dependsOn: ["1"] }, "waiting", ["waiting"], null, false],
    ["a dependency that can never be met", { dependsOn: ["2"] }, "cancelled", ["cancelled"], NOW, true],
  ])("with %s (%j): the job is %s, its tasks %j, ended at %s", (_, fields, job, tasks, endedAt, unmet) => {
    const { job: entry, verdicts } = made({ command: "true", ...fields });
    expect(entry.record.state).toBe(job);
    expect(entry.tasks.map((task) => task.state)).toStrictEqual(tasks);
    expect(entry.record.endedAt).toBe(endedAt);
    expect((verdicts?.cancel.length ?? 0) > 0).toBe(unmet);
  });

  it("queues it at the place given, in its tier's band, and leaves the state as it was", () => {
    const before = state();
    const seq = before.nextSeq;
    const { job } = made({ command: "true", qos: "high" }, before);
    expect([job.seq, job.qosPriority, job.record.createdAt]).toStrictEqual([42, 10, NOW]);
    expect(before.jobs.has("9")).toBe(false);
    expect(before.nextSeq).toBe(seq);
  });
});

describe("the inputs' digests a new job keeps (sent with each start)", () => {
  const A = "a".repeat(64);
  const B = "b".repeat(64);
  const digestsOf = (inputs: string[], inputDigests?: Record<string, string>) =>
    newJobEntry(
      state(),
      {
        id: "9",
        spec: validateJobSpec({ command: "true" }),
        owner: "alice",
        inputs,
        ...(inputDigests ? { inputDigests } : {}),
        submitKey: null,
        workflow: null,
      },
      NOW,
      42,
    ).job.record.inputDigests;

  it("keeps each input's digest by its path, and no other path's", () => {
    expect(digestsOf(["x.bin", "sub/y.bin"], { "x.bin": A, "sub/y.bin": B, "z.bin": A })).toStrictEqual({
      "x.bin": A,
      "sub/y.bin": B,
    });
  });

  it("keeps none without inputs, without digests, or with an input that has none", () => {
    expect(digestsOf([], { "x.bin": A })).toBeNull();
    expect(digestsOf(["x.bin"])).toBeNull();
    expect(digestsOf(["x.bin", "y.bin"], { "x.bin": A })).toBeNull();
    expect(digestsOf(["toString"], {})).toBeNull();
  });
});

// A job file explained before it is submitted is explained as the job a submit of it would make:
// the draft (draftJob) is the entry the submit handler makes of the same admitted job file, by the
// same owner at the same time, in everything but its id.

import { describe, expect, it } from "vitest";
import { DRAFT_JOB_ID, draftJob } from "../../../../src/broker/planner/explain-job.ts";
import { cancelJob } from "../../../../src/broker/reactor/handlers/control.ts";
import { admitSpec, submitJob } from "../../../../src/broker/reactor/handlers/submit.ts";
import { ClusterState } from "../../../../src/broker/state/cluster-state.ts";
import type { JobEntry } from "../../../../src/broker/state/job-entry.ts";
import { uploadedInputs } from "../../../../src/common/model/input-spec.ts";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import { parseQosFile } from "../../../../src/common/model/qos-file.ts";
import { HandlerBench } from "../../../helpers/handler-bench.ts";

const QOS = parseQosFile(`
tiers:
  normal:
    maxWallSeconds: 600
  high:
    priority: 10
`);

/** A job as its id leaves it: what a draft and a submitted job must agree on. */
function apartFromId(job: JobEntry) {
  return {
    record: { ...job.record, id: "ID" },
    tasks: job.tasks.map((task) => ({ ...task, jobId: "ID" })),
    seq: job.seq,
    qosPriority: job.qosPriority,
    counts: { ...job.counts },
    pending: [...job.pending],
    ready: [...job.ready],
  };
}

/** A state with job 1 pending and job 2 cancelled (an ended job, out of memory). */
function bench(): HandlerBench {
  const b = new HandlerBench(new ClusterState({}, QOS));
  const spec = validateJobSpec({ command: "true" });
  b.run((step) => submitJob(step, { id: "1", spec, owner: "alice", inputs: [] }));
  b.run((step) => submitJob(step, { id: "2", spec, owner: "alice", inputs: [] }));
  b.run((step) => cancelJob(step, "2"));
  return b;
}

describe("draftJob", () => {
  it.each<[string, Record<string, unknown>]>([
    ["a job file without a name (the submit names it from its command)", { command: "/usr/bin/env true" }],
    ["a named job file of a priority", { command: "true", name: "mine", priority: 3 }],
    ["an array", { command: "true", array: { count: 3 } }],
    ["a job file with inputs", { command: "cat data.txt", inputs: ["data.txt"] }],
    ["a tier of its own", { command: "true", qos: "high" }],
    ["a dependency not yet met (its tasks wait)", { command: "true", dependsOn: ["1"] }],
    [
      "a dependency that can never be met (its tasks and the job end cancelled)",
      { command: "true", dependsOn: ["2"] },
    ],
  ])("is the job a submit makes of the same file, but for its id: %s", (_, fields) => {
    const b = bench();
    b.now += 5_000;
    const spec = admitSpec(b.state, validateJobSpec(fields), "alice", null);
    const draft = draftJob(b.state, spec, "alice", b.now);
    expect(draft.id).toBe(DRAFT_JOB_ID);
    const submitted = b.run((step) =>
      submitJob(step, { id: "7", spec, owner: "alice", inputs: uploadedInputs(spec.inputs), admitted: true }),
    ).result;
    expect(apartFromId(draft)).toStrictEqual(apartFromId(submitted));
  });
});

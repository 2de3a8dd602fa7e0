// A job file explained before it is submitted (`steward submit --dry-run`): the read model makes a
// job entry the state never holds and runs explain over it, the next pass run dry with the draft
// queued where a submit would put it. Nothing is written, nothing started; dependencies are
// checked as a submit checks them.

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { DRAFT_JOB_ID } from "../../../../src/broker/planner/explain-job.ts";
import type { Core } from "../../../../src/broker/server/core.ts";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import { Harness, hello, settle, submitOn } from "../../../helpers/core-harness.ts";

let harness: Harness;
let core: Core;

beforeEach(async () => {
  harness = new Harness();
  core = await harness.start();
});

afterEach(async () => {
  await harness.close();
});

const spec = (fields: Record<string, unknown>) => validateJobSpec({ command: "true", ...fields });

describe("explaining a job file not submitted", () => {
  it("says which hosts take it and what the next pass does, and makes no job and starts nothing", async () => {
    await core.agents.attachHost(hello("h1"));
    await core.agents.attachHost(hello("h2"));
    await settle();
    const sentBefore = harness.sent.length;
    const { job, explanation } = core.read.explainDraft(
      spec({ requirements: 'host.cpus >= 1 && host.name == "h2"' }),
      "alice",
      null,
    );
    expect(job.id).toBe(DRAFT_JOB_ID);
    expect(job.record.state).toBe("pending");
    expect(explanation.summary).toEqual({ matching: 1, withRoom: 1 });
    expect(explanation.clauses.map((clause) => [clause.clause, clause.matching])).toEqual([
      ["host.cpus >= 1", 2],
      ['host.name == "h2"', 1],
    ]);
    expect(explanation.hosts.map((host) => [host.host, host.eligible])).toEqual([
      ["h1", false],
      ["h2", true],
    ]);
    expect(explanation.nextPass.line).toBe("the next pass starts task 0 on h2");
    await settle();
    expect(core.read.listJobs(true)).toEqual([]);
    expect(harness.sent.length).toBe(sentBefore);
    expect(harness.starts()).toEqual([]);
  });

  it("counts an array's tasks over the free slots, and names no host when none matches", async () => {
    await core.agents.attachHost(hello("h1", [], 2));
    await settle();
    const array = core.read.explainDraft(spec({ array: { count: 3 } }), "alice", null).explanation;
    expect(array.nextPass.starts.map((start) => start.task)).toEqual([0, 1]);
    const none = core.read.explainDraft(spec({ requirements: "host.memFreeMb > 1e12" }), "alice", null);
    expect(none.explanation.summary).toEqual({ matching: 0, withRoom: 0 });
    expect(none.explanation.nextPass.line).toBe(
      "the next pass does not start it: no host that takes work matches it",
    );
  });

  it("waits behind the queue as a submit would: last of its priority, ahead of lower ones", async () => {
    await core.agents.attachHost(hello("h1", [], 1));
    const running = await submitOn(core, spec({ command: "sleep 100" }), "alice");
    await settle();
    expect(running.latestAttempt(0)?.state).toBe("starting");
    const queued = await submitOn(core, spec({ priority: 1 }), "alice");
    await settle();
    const same = core.read.explainDraft(spec({ priority: 1 }), "alice", null).explanation;
    expect(same.ahead.map((other) => other.id)).toEqual([queued.id]);
    const higher = core.read.explainDraft(spec({ priority: 2 }), "alice", null).explanation;
    expect(higher.ahead).toEqual([]);
  });

  it("checks dependencies as a submit does: an unknown job or another user's is no job", async () => {
    await core.agents.attachHost(hello("h1", [], 1));
    const bobs = await submitOn(core, spec({ command: "sleep 100" }), "bob");
    await settle();
    expect(() => core.read.explainDraft(spec({ dependsOn: ["999"] }), "alice", null)).toThrow(
      "dependsOn[0]: no job 999",
    );
    expect(() => core.read.explainDraft(spec({ dependsOn: [bobs.id] }), "alice", "alice")).toThrow(
      `dependsOn[0]: no job ${bobs.id}`,
    );
    const { job, explanation } = core.read.explainDraft(spec({ dependsOn: [bobs.id] }), "admin", null);
    expect(job.record.state).toBe("waiting");
    expect(explanation.reasons).toEqual([`waiting for its dependency ${bobs.id} (running) to succeed`]);
  });
});

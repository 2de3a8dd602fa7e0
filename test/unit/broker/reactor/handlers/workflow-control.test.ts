// A workflow's jobs cancelled, held, released or removed as one request (handlers/workflow-control.ts),
// as pure handlers (test/helpers/handler-bench.ts): a workflow not known is not found; a cancel
// reaches every job not ended, dependants first (each ends by the cancel, not as its dependency's
// failure); a removal is refused while a job has not ended; a hold takes the jobs not held yet, a
// release the held ones; what each answers is the members it acted on, in the workflow's order.

import { describe, expect, it } from "vitest";
import { ConflictError, NotFoundError } from "../../../../../src/broker/reactor/errors.ts";
import {
  attachHost,
  attemptEnded,
  attemptStarted,
} from "../../../../../src/broker/reactor/handlers/agent-reports.ts";
import { holdJob, removeJob } from "../../../../../src/broker/reactor/handlers/control.ts";
import {
  cancelWorkflow,
  holdWorkflow,
  releaseWorkflow,
  removeWorkflow,
} from "../../../../../src/broker/reactor/handlers/workflow-control.ts";
import { submitWorkflow } from "../../../../../src/broker/reactor/handlers/workflows.ts";
import { validateWorkflowFile } from "../../../../../src/common/model/workflow.ts";
import { ended, facts, hello } from "../../../../helpers/agent-messages.ts";
import { HandlerBench } from "../../../../helpers/handler-bench.ts";

/** Workflow flow-1: a, then b and c, then d (jobs 1 to 4); a placed and started on h1. */
function diamond(): HandlerBench {
  const bench = new HandlerBench();
  bench.run((step) => attachHost(step, hello("h1", [], 8)));
  const file = validateWorkflowFile({
    jobs: {
      a: { command: "a" },
      b: { command: "b", dependsOn: ["a"] },
      c: { command: "c", dependsOn: ["a"] },
      d: { command: "d", dependsOn: ["b", "c"] },
    },
  });
  const ids = new Map([
    ["a", "1"],
    ["b", "2"],
    ["c", "3"],
    ["d", "4"],
  ]);
  bench.run((step) => submitWorkflow(step, { id: "flow-1", file, owner: "alice", ids }));
  bench.schedule();
  bench.run((step) => attemptStarted(step, "h1", { jobId: "1", taskIndex: 0, attempt: 1 }));
  return bench;
}

const names = (touched: { jobs: { name: string }[] }) => touched.jobs.map((member) => member.name);
const stateOf = (bench: HandlerBench, id: string) => bench.state.jobState(id);

/** What `run` throws: its class and message. */
function thrown(run: () => unknown): { type: string; message: string } {
  try {
    run();
  } catch (error) {
    return { type: (error as Error).constructor.name, message: (error as Error).message };
  }
  return { type: "none", message: "" };
}

describe("a workflow's jobs as one request", () => {
  it("a workflow not known is not found, whatever is asked", () => {
    const bench = diamond();
    for (const action of [cancelWorkflow, removeWorkflow, holdWorkflow, releaseWorkflow])
      expect(thrown(() => bench.run((step) => action(step, "flow-9")))).toEqual({
        type: NotFoundError.name,
        message: "no workflow flow-9",
      });
  });

  it("a cancel ends every job not ended, each by the cancel, naming who asked; a second one finds none", () => {
    const bench = diamond();
    const touched = bench.run((step) => cancelWorkflow(step, "flow-1", "bob")).result;
    expect(names(touched)).toEqual(["a", "b", "c", "d"]);
    // a's attempt was asked to stop: a ends once it has.
    expect(stateOf(bench, "1")).toBe("running");
    bench.run((step) => attemptEnded(step, "h1", ended("1", 1, "cancelled")));
    for (const id of ["1", "2", "3", "4"]) {
      expect(stateOf(bench, id)).toBe("cancelled");
      expect(
        bench
          .events(id)
          .filter((event) => event.kind === "cancel")
          .map((event) => event.data),
      ).toEqual([{ by: "bob" }]);
      expect(bench.events(id).filter((event) => event.kind === "dependency.unmet")).toEqual([]);
    }
    expect(names(bench.run((step) => cancelWorkflow(step, "flow-1")).result)).toEqual([]);
  });

  it("a cancel passes over the jobs that ended or were removed", () => {
    const bench = diamond();
    bench.run((step) => attemptEnded(step, "h1", ended("1", 1)));
    bench.run((step) => removeJob(step, "1"));
    expect(stateOf(bench, "1")).toBeUndefined();
    const touched = bench.run((step) => cancelWorkflow(step, "flow-1")).result;
    expect(names(touched)).toEqual(["b", "c", "d"]);
    expect(["2", "3", "4"].map((id) => stateOf(bench, id))).toEqual(["cancelled", "cancelled", "cancelled"]);
    // No one named: the user.
    expect(bench.events("2").find((event) => event.kind === "cancel")?.data).toEqual({ by: "user" });
  });

  it("a removal is refused while a job has not ended, naming it, and removes nothing; then removes those left", () => {
    const bench = diamond();
    bench.run((step) => attemptEnded(step, "h1", ended("1", 1)));
    const changes = bench.recorded.length;
    expect(thrown(() => bench.run((step) => removeWorkflow(step, "flow-1")))).toEqual({
      type: ConflictError.name,
      message: "job 2 (b) of workflow flow-1 is pending: cancel the workflow first (steward cancel flow-1)",
    });
    expect(bench.recorded.length).toBe(changes);
    bench.run((step) => cancelWorkflow(step, "flow-1"));
    bench.run((step) => removeJob(step, "2"));
    const removed = bench.run((step) => removeWorkflow(step, "flow-1"));
    expect(names(removed.result)).toEqual(["a", "c", "d"]);
    expect(removed.changes).toEqual(["1", "3", "4"].map((jobId) => ({ op: "deleteJob", jobId })));
    expect(["1", "2", "3", "4"].map((id) => stateOf(bench, id))).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
  });

  it("a hold takes the jobs not ended and not held yet, with its reason; a release the held ones", () => {
    const bench = diamond();
    bench.run((step) => holdJob(step, "3", "carol"));
    const held = bench.run((step) => holdWorkflow(step, "flow-1", "bob", "maintenance")).result;
    expect(names(held)).toEqual(["a", "b", "d"]);
    expect(
      bench
        .events("2")
        .filter((event) => event.kind === "hold")
        .map((event) => event.data),
    ).toEqual([{ by: "bob", reason: "maintenance" }]);
    expect(
      bench
        .events("3")
        .filter((event) => event.kind === "hold")
        .map((event) => event.data),
    ).toEqual([{ by: "carol" }]);
    // a's attempt was stopped by the hold: it ends, a waits held.
    bench.run((step) => attemptEnded(step, "h1", ended("1", 1, "preempted")));
    const released = bench.run((step) => releaseWorkflow(step, "flow-1", "bob")).result;
    expect(names(released)).toEqual(["a", "b", "c", "d"]);
    expect(["1", "2", "3", "4"].map((id) => bench.state.jobs.get(id)?.record.held)).toEqual([
      false,
      false,
      false,
      false,
    ]);
    expect(
      bench
        .events("4")
        .filter((event) => event.kind === "release")
        .map((event) => event.data),
    ).toEqual([{ by: "bob" }]);
    // Nothing held: a release takes none; a job that ended is not held.
    expect(names(bench.run((step) => releaseWorkflow(step, "flow-1")).result)).toEqual([]);
    bench.schedule();
    bench.run((step) => attemptStarted(step, "h1", { jobId: "1", taskIndex: 0, attempt: 2 }));
    bench.run((step) => attemptEnded(step, "h1", ended("1", 2)));
    expect(names(bench.run((step) => holdWorkflow(step, "flow-1")).result)).toEqual(["b", "c", "d"]);
    expect(
      bench
        .events("3")
        .filter((event) => event.kind === "hold")
        .at(-1)?.data,
    ).toEqual({ by: "user" });
    expect(names(bench.run((step) => releaseWorkflow(step, "flow-1")).result)).toEqual(["b", "c", "d"]);
    expect(
      bench
        .events("3")
        .filter((event) => event.kind === "release")
        .at(-1)?.data,
    ).toEqual({ by: "user" });
    bench.run((step) => holdWorkflow(step, "flow-1"));
    bench.run((step) => removeJob(step, "1"));
    expect(names(bench.run((step) => holdWorkflow(step, "flow-1")).result)).toEqual([]);
  });

  it("a hold passes over a job that has ended though still in memory (a losing replica stopping)", () => {
    const bench = new HandlerBench();
    const host = (name: string, speed: number) => ({
      ...hello(name, [], 1),
      facts: facts(name, { speed, slotsFree: 1 }),
    });
    bench.run((step) => attachHost(step, host("h1", 0.1)));
    const file = validateWorkflowFile({
      jobs: { x: { command: "x", replicas: 2 }, y: { command: "y", dependsOn: ["x"] } },
    });
    const ids = new Map([
      ["x", "1"],
      ["y", "2"],
    ]);
    bench.run((step) => submitWorkflow(step, { id: "flow-1", file, owner: "alice", ids }));
    bench.schedule();
    bench.run((step) => attemptStarted(step, "h1", { jobId: "1", taskIndex: 0, attempt: 1 }));
    bench.run((step) => attachHost(step, host("h2", 4)));
    bench.schedule();
    bench.run((step) => attemptStarted(step, "h2", { jobId: "1", taskIndex: 0, attempt: 2 }));
    bench.run((step) => attemptEnded(step, "h2", ended("1", 2)));
    expect(bench.state.jobs.get("1")?.record.state).toBe("succeeded");
    const held = bench.run((step) => holdWorkflow(step, "flow-1")).result;
    expect(names(held)).toEqual(["y"]);
  });
});

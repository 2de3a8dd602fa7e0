// The one plan applier (handlers/apply-plan.ts), given plans made by hand on a bench
// (test/helpers/handler-bench.ts): each entry is checked again against the state as it is now and
// dropped when it no longer holds; a preemption stops its victim and keeps the room, both or
// neither; a placement tells of itself as a first attempt or a restart; what a step that throws
// did is undone.

import { describe, expect, it } from "vitest";
import {
  attachHost,
  attemptEnded,
  attemptStarted,
} from "../../../../../src/broker/reactor/handlers/agent-reports.ts";
import { applyPlan, applyStops } from "../../../../../src/broker/reactor/handlers/apply-plan.ts";
import { drainHost, holdJob } from "../../../../../src/broker/reactor/handlers/control.ts";
import { submitJob } from "../../../../../src/broker/reactor/handlers/submit.ts";
import type { Plan, TaskPlacement } from "../../../../../src/broker/scheduler/plan.ts";
import type { StopEntry } from "../../../../../src/broker/scheduler/view.ts";
import { agentDetached } from "../../../../../src/broker/state/soft-state.ts";
import { validateJobSpec } from "../../../../../src/common/model/job-spec.ts";
import { ended, hello } from "../../../../helpers/agent-messages.ts";
import { HandlerBench } from "../../../../helpers/handler-bench.ts";

const plan = (parts: Partial<Plan>): Plan => ({ place: [], stop: [], preempt: [], ...parts });
const task = (jobId: string, host: string, taskIndex = 0): TaskPlacement => ({
  kind: "task",
  jobId,
  taskIndex,
  host,
});
const preempted = (jobId: string, attempt = 1): StopEntry => ({
  jobId,
  taskIndex: 0,
  attempt,
  intent: { outcome: "preempted", reason: { kind: "held" } },
});

/** A bench with h1 of one slot running job "v" (started), and job "w" submitted and waiting for room. */
function crowded() {
  const bench = new HandlerBench();
  bench.run((step) => attachHost(step, hello("h1", [], 1)));
  const submit = (id: string, spec: Record<string, unknown> = { command: "work" }) =>
    bench.run((step) => submitJob(step, { id, spec: validateJobSpec(spec), owner: "alice", inputs: [] }))
      .result;
  const victim = submit("v");
  bench.run((step) => applyPlan(step, plan({ place: [task("v", "h1")] })));
  bench.run((step) => attemptStarted(step, "h1", { jobId: "v", taskIndex: 0, attempt: 1 }));
  const waiting = submit("w");
  bench.effects = [];
  return { bench, victim, waiting, submit };
}

describe("a preemption", () => {
  it("stops the victim and keeps its room for the task", () => {
    const { bench } = crowded();
    const applied = bench.run((step) =>
      applyPlan(step, plan({ preempt: [{ stop: preempted("v"), place: task("w", "h1") }] })),
    ).result;
    expect(applied.stopped.map((attempt) => [attempt.jobId, attempt.number])).toEqual([["v", 1]]);
    expect(applied.reserved).toEqual([
      { jobId: "w", taskIndex: 0, host: "h1", cpus: 1, memoryMb: 0, stopped: expect.stringContaining("v") },
    ]);
    expect(bench.state.reservations.get("w", 0)).toBe(applied.reserved[0]);
    expect(bench.stops().map((stop) => stop.jobId)).toEqual(["v"]);
  });

  it("is dropped whole when it no longer holds", () => {
    const cases: [string, (bench: HandlerBench) => Plan["preempt"][number]][] = [
      ["a task not known", () => ({ stop: preempted("v"), place: task("w", "h1", 3) })],
      ["a job not known", () => ({ stop: preempted("v"), place: task("x", "h1") })],
      ["a victim not live", () => ({ stop: preempted("v", 4), place: task("w", "h1") })],
      ["a victim on another host", () => ({ stop: preempted("v"), place: task("w", "h2") })],
      [
        "a victim stopping already",
        (bench) => {
          bench.run((step) => holdJob(step, "v"));
          return { stop: preempted("v"), place: task("w", "h1") };
        },
      ],
    ];
    for (const [name, made] of cases) {
      const { bench } = crowded();
      const preemption = made(bench);
      bench.effects = [];
      const applied = bench.run((step) => applyPlan(step, plan({ preempt: [preemption] }))).result;
      expect({ name, stopped: applied.stopped.length, reserved: applied.reserved.length }).toEqual({
        name,
        stopped: 0,
        reserved: 0,
      });
      expect({ name, stops: bench.stops() }).toEqual({ name, stops: [] });
      expect(bench.state.reservations.get("w", 0)).toBeUndefined();
    }
  });

  it("is dropped when room is kept for the task already, and its room is given back when the step fails", () => {
    const { bench, submit } = crowded();
    const other = submit("o");
    bench.run((step) => applyPlan(step, plan({ place: [task(other.id, "h1")] })));
    bench.run((step) =>
      applyPlan(step, plan({ preempt: [{ stop: preempted("v"), place: task("w", "h1") }] })),
    );
    const kept = bench.state.reservations.get("w", 0);
    expect(kept).toBeDefined();
    const again = bench.run((step) =>
      applyPlan(step, plan({ preempt: [{ stop: preempted("v"), place: task("w", "h1") }] })),
    ).result;
    expect(again.reserved).toEqual([]);
    expect(bench.state.reservations.get("w", 0)).toBe(kept);

    // Into that room (on h2, sooner) in a step that fails: the room is kept again.
    bench.run((step) => attachHost(step, hello("h2", [], 1)));
    expect(() =>
      bench.run((step) => {
        applyPlan(step, plan({ place: [task("w", "h2")] }));
        throw new Error("later write failed");
      }),
    ).toThrow("later write failed");
    expect(bench.state.reservations.get("w", 0)).toBe(kept);

    const fresh = crowded();
    expect(() =>
      fresh.bench.run((step) => {
        applyPlan(step, plan({ preempt: [{ stop: preempted("v"), place: task("w", "h1") }] }));
        throw new Error("later write failed");
      }),
    ).toThrow("later write failed");
    expect(fresh.bench.state.reservations.get("w", 0)).toBeUndefined();
  });
});

describe("stops", () => {
  it("answer the attempts asked to stop, leaving out those stopping already or not live", () => {
    const { bench, victim } = crowded();
    const stopped = bench.run((step) => applyStops(step, [preempted("v"), preempted("v", 5)])).result;
    expect(stopped).toEqual([victim.attempt(0, 1)]);
    bench.effects = [];
    expect(bench.run((step) => applyStops(step, [preempted("v")])).result).toEqual([]);
    expect(bench.stops()).toEqual([]);
  });

  it("record a migration's target and when the task moved, undone with a step that fails", () => {
    const { bench } = crowded();
    const migrate: StopEntry = { ...preempted("v"), migrateTo: { to: null } };
    bench.state.movedAt.set("v/0", 5);
    expect(() =>
      bench.run((step) => {
        applyStops(step, [migrate]);
        throw new Error("later write failed");
      }),
    ).toThrow();
    expect(bench.state.movedAt.get("v/0")).toBe(5);
    bench.state.movedAt.delete("v/0");
    expect(() =>
      bench.run((step) => {
        applyStops(step, [migrate]);
        throw new Error("later write failed");
      }),
    ).toThrow();
    expect(bench.state.movedAt.has("v/0")).toBe(false);
    bench.run((step) => applyStops(step, [migrate]));
    expect(bench.state.movedAt.get("v/0")).toBe(bench.now);
    expect(bench.state.jobs.get("v")!.tasks[0].migration).toEqual({ to: null, from: "h1" });
  });

  it("tell why in the event given with them", () => {
    const { bench } = crowded();
    bench.run((step) =>
      applyStops(step, [{ ...preempted("v"), note: { kind: "hold", data: { by: "scheduler" } } }]),
    );
    expect(bench.events("v").filter((event) => event.kind === "hold")).toHaveLength(1);
  });
});

describe("a placement", () => {
  it("is dropped on a host not ready or not connected, or without the room, or for a task not waiting", () => {
    const cases: [string, (bench: HandlerBench) => TaskPlacement][] = [
      [
        "a host draining",
        (bench) => {
          bench.run((step) => drainHost(step, "h2"));
          return task("w", "h2");
        },
      ],
      [
        "a host not connected",
        (bench) => {
          agentDetached(bench.state, "h2");
          return task("w", "h2");
        },
      ],
      ["a host not known", () => task("w", "h9")],
      ["a job not known", () => task("x", "h2")],
      ["a task not known", () => task("w", "h2", 4)],
      ["a task running", () => task("v", "h2")],
      ["a host without room", () => task("w", "h1")],
      [
        "a held job",
        (bench) => {
          bench.run((step) => holdJob(step, "w"));
          return task("w", "h2");
        },
      ],
    ];
    for (const [name, made] of cases) {
      const { bench } = crowded();
      bench.run((step) => attachHost(step, hello("h2", [], 1)));
      const placement = made(bench);
      const applied = bench.run((step) => applyPlan(step, plan({ place: [placement] }))).result;
      expect({ name, started: applied.started }).toEqual({ name, started: [] });
    }
  });

  it("takes a host's memory and countable resources into account, for every rank it runs", () => {
    const placedOn = (spec: Record<string, unknown>, placement: Plan["place"][number], slots = 4) => {
      const bench = new HandlerBench();
      bench.run((step) => attachHost(step, hello("h1", [], slots)));
      bench.run((step) =>
        submitJob(step, { id: "1", spec: validateJobSpec(spec), owner: "alice", inputs: [] }),
      );
      return bench.run((step) => applyPlan(step, plan({ place: [placement] }))).result.started.length;
    };
    // facts("h1"): 8000 MB.
    expect(placedOn({ command: "work", resources: { memoryMb: 8000 } }, task("1", "h1"))).toBe(1);
    expect(placedOn({ command: "work", resources: { memoryMb: 8001 } }, task("1", "h1"))).toBe(0);
    expect(placedOn({ command: "work", resources: { custom: { license: 1 } } }, task("1", "h1"))).toBe(0);
    const gang = { kind: "gang" as const, jobId: "1", taskIndex: 0, host: "h1", ranks: ["h1", "h1"] };
    const ranks = { command: "work", nodes: 2, nodesPerHost: 2 };
    expect(placedOn({ ...ranks, resources: { cpus: 2 } }, gang, 4)).toBe(1);
    expect(placedOn({ ...ranks, resources: { cpus: 2 } }, gang, 3)).toBe(0);
    expect(placedOn({ ...ranks, resources: { memoryMb: 4000 } }, gang)).toBe(1);
    expect(placedOn({ ...ranks, resources: { memoryMb: 4001 } }, gang)).toBe(0);
    // A rank on a host not known; GPUs the host does not have.
    expect(placedOn({ command: "work", nodes: 2 }, { ...gang, ranks: ["h1", "h9"] })).toBe(0);
    expect(placedOn({ command: "work", resources: { gpus: 1 } }, task("1", "h1"))).toBe(0);
  });

  it("of an array at its throttle is dropped", () => {
    const bench = new HandlerBench();
    bench.run((step) => attachHost(step, hello("h1", [], 4)));
    bench.run((step) =>
      submitJob(step, {
        id: "1",
        spec: validateJobSpec({ command: "work", array: { count: 3, parallel: 1 } }),
        owner: "alice",
        inputs: [],
      }),
    );
    const applied = bench.run((step) =>
      applyPlan(step, plan({ place: [task("1", "h1", 0), task("1", "h1", 1)] })),
    );
    expect(applied.result.started.map((attempt) => attempt.taskIndex)).toEqual([0]);
  });

  it("of one host without devices shares the host's placement; an array's first attempt is not told", () => {
    const bench = new HandlerBench();
    bench.run((step) => attachHost(step, hello("h1", [], 4)));
    bench.run((step) =>
      submitJob(step, {
        id: "1",
        spec: validateJobSpec({ command: "work", array: { count: 2 } }),
        owner: "alice",
        inputs: [],
      }),
    );
    const { started } = bench.run((step) =>
      applyPlan(step, plan({ place: [task("1", "h1", 0), task("1", "h1", 1)] })),
    ).result;
    expect(started[0].placement).toBe(started[1].placement);
    expect(bench.events("1").map((event) => event.kind)).not.toContain("attempt.placed");
    expect(bench.starts().every((start) => !("gang" in start))).toBe(true);
  });

  it("tells of a single task's first attempt as placed, and of a later one as a restart, with how long it waited", () => {
    const bench = new HandlerBench();
    bench.run((step) => attachHost(step, hello("h1", [], 4)));
    bench.run((step) =>
      submitJob(step, {
        id: "1",
        spec: validateJobSpec({ command: "work", retry: { maxAttempts: 2, backoffSeconds: 10 } }),
        owner: "alice",
        inputs: [],
      }),
    );
    bench.now += 3000;
    bench.run((step) => applyPlan(step, plan({ place: [task("1", "h1")] })));
    const placed = () =>
      bench.effects.flatMap((effect) => (effect.kind === "placed" ? [effect.placed.waitedMs] : []));
    expect(placed()).toEqual([3000]);
    bench.run((step) => attemptStarted(step, "h1", { jobId: "1", taskIndex: 0, attempt: 1 }));
    bench.run((step) => attemptEnded(step, "h1", ended("1", 1, "failed")));
    const notBefore = bench.state.jobs.get("1")!.tasks[0].notBefore!;
    expect(notBefore).toBeGreaterThan(bench.now);
    bench.now = notBefore + 2000;
    // Its back-off over, as a pass finds it.
    const job = bench.state.jobs.get("1")!;
    job.promote(job.tasks[0]);
    bench.run((step) => applyPlan(step, plan({ place: [task("1", "h1")] })));
    expect(placed()).toEqual([3000, 2000]);
    expect(bench.events("1").map((event) => event.kind)).toEqual(
      expect.arrayContaining(["attempt.placed", "restart"]),
    );
    expect(bench.events("1").filter((event) => event.kind === "attempt.placed")).toHaveLength(1);
    expect(bench.events("1").find((event) => event.kind === "restart")?.data).toEqual({
      task: 0,
      attempt: 2,
      host: "h1",
      checkpoint: null,
      checkpointBytes: null,
      array: false,
    });
  });

  it("tells of a migrated array task's restart with where it moved from, as an array's", () => {
    const bench = new HandlerBench();
    bench.run((step) => attachHost(step, hello("h1", [], 4)));
    bench.run((step) =>
      submitJob(step, {
        id: "1",
        spec: validateJobSpec({ command: "work", array: { count: 2 } }),
        owner: "alice",
        inputs: [],
      }),
    );
    bench.run((step) => applyPlan(step, plan({ place: [task("1", "h1")] })));
    bench.run((step) => attemptStarted(step, "h1", { jobId: "1", taskIndex: 0, attempt: 1 }));
    const migrate: StopEntry = {
      jobId: "1",
      taskIndex: 0,
      attempt: 1,
      intent: { outcome: "migrated", reason: { kind: "migrate-requested", to: null } },
      migrateTo: { to: null },
    };
    bench.run((step) => applyStops(step, [migrate]));
    bench.run((step) => attemptEnded(step, "h1", ended("1", 1, "migrated")));
    bench.run((step) => applyPlan(step, plan({ place: [task("1", "h1")] })));
    expect(bench.events("1").find((event) => event.kind === "restart")?.data).toMatchObject({
      attempt: 2,
      migration: { to: null, from: "h1" },
      array: true,
    });
  });
});

describe("a second preemption for a task with room kept already", () => {
  it("is dropped, its victim left running", () => {
    const bench = new HandlerBench();
    bench.run((step) => attachHost(step, hello("h1", [], 2)));
    const submit = (id: string) =>
      bench.run((step) =>
        submitJob(step, { id, spec: validateJobSpec({ command: "work" }), owner: "alice", inputs: [] }),
      );
    submit("v1");
    submit("v2");
    bench.run((step) => applyPlan(step, plan({ place: [task("v1", "h1"), task("v2", "h1")] })));
    submit("w");
    bench.run((step) =>
      applyPlan(step, plan({ preempt: [{ stop: preempted("v1"), place: task("w", "h1") }] })),
    );
    const again = bench.run((step) =>
      applyPlan(step, plan({ preempt: [{ stop: preempted("v2"), place: task("w", "h1") }] })),
    ).result;
    expect(again.stopped).toEqual([]);
    expect(bench.state.jobs.get("v2")!.attempt(0, 1)!.state).not.toBe("stopping");
  });
});

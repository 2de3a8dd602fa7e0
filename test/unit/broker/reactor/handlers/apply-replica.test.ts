// A replica placement applied (handlers/apply-replica.ts) from plans made by hand on a bench
// (test/helpers/handler-bench.ts): checked again against the state as it is now, it starts one
// more attempt of a running task on a free host that runs none of it, telling of itself, or is
// dropped: a job, task or host not known, a task not running or with an attempt being stopped,
// as many replicas as the job asks already, a host running one of it, not ready or not connected,
// without the cpus, memory, custom units or GPUs the job needs.

import { describe, expect, it } from "vitest";
import { attachHost, attemptStarted } from "../../../../../src/broker/reactor/handlers/agent-reports.ts";
import { applyPlan, applyStops } from "../../../../../src/broker/reactor/handlers/apply-plan.ts";
import { drainHost, migrateJob } from "../../../../../src/broker/reactor/handlers/control.ts";
import { submitJob } from "../../../../../src/broker/reactor/handlers/submit.ts";
import { agentDetached } from "../../../../../src/broker/state/soft-state.ts";
import type { HostFacts } from "../../../../../src/common/model/host-facts.ts";
import { validateJobSpec } from "../../../../../src/common/model/job-spec.ts";
import { facts, hello } from "../../../../helpers/agent-messages.ts";
import { HandlerBench } from "../../../../helpers/handler-bench.ts";

/**
 * Job "1" of two replicas (and `spec`) running on h1 (four slots), with h2 (two slots, `h2Facts`)
 * and h3 (two slots) idle;
 * job "2" submitted and not placed.
 */
function replicable(spec: Record<string, unknown> = {}, h2Facts: Partial<HostFacts> = {}) {
  const bench = new HandlerBench();
  const gpus = { gpus: ["0", "1"], resources: { license: 2 } };
  bench.run((step) => attachHost(step, { ...hello("h1", [], 4), facts: facts("h1", gpus) }));
  for (const name of ["h2", "h3"])
    bench.run((step) =>
      attachHost(step, {
        ...hello(name, [], 2),
        facts: facts(name, { ...gpus, ...(name === "h2" ? h2Facts : {}) }),
      }),
    );
  const submit = (id: string, extra: Record<string, unknown>) =>
    bench.run((step) =>
      submitJob(step, {
        id,
        spec: validateJobSpec({ command: "work", ...extra }),
        owner: "alice",
        inputs: [],
      }),
    ).result;
  const job = submit("1", { replicas: 2, ...spec });
  submit("2", {});
  bench.run((step) =>
    applyPlan(step, {
      place: [{ kind: "task", jobId: "1", taskIndex: 0, host: "h1" }],
      stop: [],
      preempt: [],
    }),
  );
  bench.run((step) => attemptStarted(step, "h1", { jobId: "1", taskIndex: 0, attempt: 1 }));
  bench.effects = [];
  return { bench, job };
}

/** Applies a plan of one replica placement; answers the attempts it started. */
const replica = (bench: HandlerBench, jobId: string, host: string, taskIndex = 0) =>
  bench.run((step) =>
    applyPlan(step, { place: [{ kind: "replica", jobId, taskIndex, host }], stop: [], preempt: [] }),
  ).result.started;

describe("a replica placement", () => {
  it("starts one more attempt of the running task on a free host, telling which replica it is", () => {
    const { bench, job } = replicable();
    const [attempt] = replica(bench, "1", "h2");
    expect(attempt).toMatchObject({ jobId: "1", taskIndex: 0, number: 2, host: "h2", state: "starting" });
    expect(job.tasks[0]).toMatchObject({ state: "running", attempts: 2 });
    expect(bench.starts().map(({ host, jobId, attempt }) => ({ host, jobId, attempt }))).toEqual([
      { host: "h2", jobId: "1", attempt: 2 },
    ]);
    expect(bench.events("1").find((event) => event.kind === "replica.placed")?.data).toEqual({
      task: 0,
      attempt: 2,
      host: "h2",
      replica: 2,
      replicas: 2,
    });
  });

  it("takes the GPUs it needs on the host, named in the attempt's placement", () => {
    const { bench } = replicable({ resources: { gpus: 1 } });
    const [attempt] = replica(bench, "1", "h2");
    expect(attempt.placement).toEqual([{ host: "h2", rank: 0, gpus: ["0"] }]);
  });

  it("is dropped when it no longer holds", () => {
    const cases: [
      string,
      Record<string, unknown>,
      Partial<HostFacts>,
      (bench: HandlerBench) => [string, string, number?],
    ][] = [
      ["a job not known", {}, {}, () => ["9", "h2"]],
      ["a host not known", {}, {}, () => ["1", "h9"]],
      ["a task not known", {}, {}, () => ["1", "h2", 5]],
      ["a task not running", {}, {}, () => ["2", "h2"]],
      [
        "an attempt of the task being stopped",
        {},
        {},
        (bench) => {
          bench.run((step) => migrateJob(step, "1", "h3"));
          return ["1", "h2"];
        },
      ],
      [
        "as many replicas live as the job asks",
        {},
        {},
        (bench) => {
          replica(bench, "1", "h3");
          return ["1", "h2"];
        },
      ],
      ["a host running an attempt of the task", {}, {}, () => ["1", "h1"]],
      [
        "a host not ready",
        {},
        {},
        (bench) => {
          bench.run((step) => drainHost(step, "h2"));
          return ["1", "h2"];
        },
      ],
      [
        "a host not connected",
        {},
        {},
        (bench) => {
          agentDetached(bench.state, "h2");
          return ["1", "h2"];
        },
      ],
      ["too few free cpus", { resources: { cpus: 3 } }, {}, () => ["1", "h2"]],
      ["too little free memory", { resources: { memoryMb: 6000 } }, { memoryMb: 5000 }, () => ["1", "h2"]],
      [
        "too few custom units",
        { resources: { custom: { license: 2 } } },
        { resources: { license: 1 } },
        () => ["1", "h2"],
      ],
      ["too few GPUs", { resources: { gpus: 2 } }, { gpus: ["0"] }, () => ["1", "h2"]],
    ];
    for (const [name, spec, h2, meanwhile] of cases) {
      const { bench, job } = replicable(spec, h2);
      const [jobId, host, taskIndex] = meanwhile(bench);
      const live = job.liveAttempts(0).length;
      bench.effects = [];
      expect([name, replica(bench, jobId, host, taskIndex)]).toEqual([name, []]);
      expect([name, job.liveAttempts(0).length, bench.starts()]).toEqual([name, live, []]);
    }
  });

  it("of a job of three replicas is dropped while one of two live is being stopped, or to a host of either", () => {
    const { bench } = replicable({ replicas: 3 });
    replica(bench, "1", "h3");
    expect(replica(bench, "1", "h1")).toEqual([]);
    bench.run((step) =>
      applyStops(step, [
        { jobId: "1", taskIndex: 0, attempt: 2, intent: { outcome: "preempted", reason: { kind: "held" } } },
      ]),
    );
    expect(replica(bench, "1", "h2")).toEqual([]);
  });

  it("takes a host whose free slots are just the job's cpus", () => {
    const { bench } = replicable({ resources: { cpus: 2 } });
    expect(replica(bench, "1", "h2")).toHaveLength(1);
  });

  it("counts the memory a task grew to, not the job's: up to the memory free", () => {
    const { bench, job } = replicable({ resources: { memoryMb: 1000 } }, { memoryMb: 3000 });
    // As if it had run out of memory and grown (set here: a replica's end grows none).
    job.tasks[0].memoryMb = 4000;
    expect(replica(bench, "1", "h2")).toEqual([]);
    job.tasks[0].memoryMb = 3000;
    expect(replica(bench, "1", "h2")).toHaveLength(1);
  });
});

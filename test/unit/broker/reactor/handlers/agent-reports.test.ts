// What agents tell the server, as pure handlers (test/helpers/handler-bench.ts): a hello records the
// host as it says (drained when leaving or when it was draining) and settles the attempts it holds
// against those the server counts live on it; an attempt's end becomes its outcome, its reason,
// whose failure it was and what it used; a start that could not be delivered ends a starting
// attempt only.

import { describe, expect, it } from "vitest";
import {
  attachHost,
  attemptEnded,
  attemptReports,
  attemptStarted,
  startUndelivered,
} from "../../../../../src/broker/reactor/handlers/agent-reports.ts";
import { drainHost, holdJob } from "../../../../../src/broker/reactor/handlers/control.ts";
import { submitJob } from "../../../../../src/broker/reactor/handlers/submit.ts";
import type { JobEntry } from "../../../../../src/broker/state/job-entry.ts";
import { validateJobSpec } from "../../../../../src/common/model/job-spec.ts";
import type { AttemptRecord } from "../../../../../src/common/model/records.ts";
import type { EndedEvent, HelloMessage } from "../../../../../src/common/protocol/messages.ts";
import { ended, hello } from "../../../../helpers/agent-messages.ts";
import { HandlerBench } from "../../../../helpers/handler-bench.ts";

/** A bench with host h1 attached and one job placed on it (started, unless `started` is false). */
function placed(spec: Record<string, unknown> = { command: "work" }, started = true) {
  const bench = new HandlerBench();
  bench.run((step) => attachHost(step, hello("h1")));
  const job = bench.run((step) =>
    submitJob(step, { id: "1", spec: validateJobSpec(spec), owner: "alice", inputs: [] }),
  ).result;
  bench.schedule();
  const ref = { jobId: job.id, taskIndex: 0, attempt: 1 };
  if (started) bench.run((step) => attemptStarted(step, "h1", ref));
  return { bench, job, ref, attempt: (): AttemptRecord => job.attempt(0, 1)! };
}

/** The kinds and data of a job's events since the submit. */
function eventsOf(bench: HandlerBench, job: JobEntry) {
  return bench.events(job.id).map(({ kind, data }) => ({ kind, data }));
}

describe("a hello", () => {
  it("records the host as its agent describes it", () => {
    const bench = new HandlerBench();
    bench.now = 2_000_000;
    const message: HelloMessage = {
      ...hello("h1", [], 3),
      pool: "gpu",
      labels: { zone: "a" },
      endsAt: 9_000_000,
      address: "10.0.0.7",
    };
    bench.run((step) => attachHost(step, message));
    const host = bench.state.hosts.get("h1")!;
    expect(host.record).toEqual({
      name: "h1",
      pool: "gpu",
      state: "ready",
      slots: 3,
      labels: { zone: "a" },
      facts: message.facts,
      lastSeen: 2_000_000,
      endsAt: 9_000_000,
    });
    expect(host.address).toBe("10.0.0.7");
    // Without an end: none; without an address: the loopback's.
    bench.run((step) => attachHost(step, hello("h2")));
    expect(bench.state.hosts.get("h2")!.record.endsAt).toBeNull();
    expect(bench.state.hosts.get("h2")!.address).toBe("127.0.0.1");
  });

  it("drains a host whose agent is leaving, and keeps a draining host draining", () => {
    const bench = new HandlerBench();
    bench.run((step) => attachHost(step, { ...hello("h1"), leaving: true }));
    expect(bench.state.hosts.get("h1")!.record.state).toBe("draining");
    bench.run((step) => attachHost(step, { ...hello("h2"), leaving: false }));
    expect(bench.state.hosts.get("h2")!.record.state).toBe("ready");
    bench.run((step) => drainHost(step, "h2"));
    bench.run((step) => attachHost(step, hello("h2")));
    expect(bench.state.hosts.get("h2")!.record.state).toBe("draining");
  });

  it("answers the attempts the agent holds that the server does not count live, with their rank", () => {
    const { bench, ref } = placed();
    const stray = { jobId: "9", taskIndex: 2, attempt: 3, rank: 1, state: "running" as const };
    const { result } = bench.run((step) =>
      attachHost(step, hello("h1", [{ ...ref, state: "running" }, stray])),
    );
    expect(result).toEqual([{ jobId: "9", taskIndex: 2, attempt: 3, rank: 1 }]);
    // The attempt it holds runs on: no stop is sent.
    expect(bench.stops()).toEqual([]);
  });

  it("takes a starting attempt the agent says runs as running, and leaves it starting otherwise", () => {
    for (const [said, after] of [
      ["running", "running"],
      ["ended", "starting"],
    ] as const) {
      const { bench, ref, attempt } = placed({ command: "work" }, false);
      expect(attempt().state).toBe("starting");
      const { result } = bench.run((step) => attachHost(step, hello("h1", [{ ...ref, state: said }])));
      expect(result).toEqual([]);
      expect(attempt().state).toBe(after);
    }
  });

  it("sends again the stop of a stopping attempt the agent holds", () => {
    const { bench, job, ref, attempt } = placed();
    bench.run((step) => holdJob(step, job.id));
    expect(attempt().state).toBe("stopping");
    bench.effects = [];
    bench.run((step) => attachHost(step, hello("h1", [{ ...ref, state: "running" }])));
    expect(bench.stops()).toEqual([
      expect.objectContaining({
        host: "h1",
        jobId: job.id,
        attempt: 1,
        outcome: "preempted",
        reason: "held",
      }),
    ]);
  });

  it("ends as lost, the agent restarted, an attempt the agent does not hold", () => {
    const { bench, job, attempt } = placed();
    const handled = bench.run((step) => attachHost(step, hello("h1")));
    expect(handled.schedule).toBe(true);
    expect(attempt()).toMatchObject({
      state: "ended",
      outcome: "lost",
      reason: "the host's agent restarted without it",
    });
    expect(eventsOf(bench, job)).toContainEqual({
      kind: "attempt.lost",
      data: expect.objectContaining({ attempt: 1, cause: "host" }),
    });
  });
});

describe("an attempt's end", () => {
  /** The attempt and its end event after `report` of the placed job's attempt 1. */
  function endWith(spec: Record<string, unknown>, report: (jobId: string) => EndedEvent) {
    const { bench, job, attempt } = placed(spec);
    bench.run((step) => attemptEnded(step, "h1", report(job.id)));
    const event = bench
      .events(job.id)
      .find((each) => each.kind.startsWith("attempt.") && each.kind !== "attempt.placed");
    return { attempt: attempt(), event, job };
  }

  it("fails a success that did not give back every output, naming those missing", () => {
    const spec = { command: "work", outputs: ["a.txt", "b.txt", "c.txt"] };
    const some = endWith(spec, (id) => ({ ...ended(id, 1), outputs: ["b.txt"] }));
    expect(some.attempt).toMatchObject({ outcome: "failed", reason: "output files missing: a.txt, c.txt" });
    const all = endWith(spec, (id) => ({ ...ended(id, 1), outputs: ["c.txt", "a.txt", "b.txt"] }));
    expect(all.attempt).toMatchObject({ outcome: "succeeded", reason: null });
    // A failure is not looked into for outputs.
    const failed = endWith(spec, (id) => ended(id, 1, "failed", { reason: "exit 1" }));
    expect(failed.attempt).toMatchObject({ outcome: "failed", reason: "exit 1" });
  });

  it("says whose failure it was: the host's unless said, the memory limit's for a failure killed by it", () => {
    const cause = (report: (jobId: string) => EndedEvent) =>
      endWith({ command: "work" }, report).event?.data.cause;
    expect(cause((id) => ended(id, 1, "lost"))).toBe("host");
    expect(cause((id) => ended(id, 1, "lost", { cause: "staging" }))).toBe("staging");
    expect(cause((id) => ended(id, 1, "failed", { cause: "oom" }))).toBe("oom");
    expect(cause((id) => ended(id, 1, "failed", { cause: "host" }))).toBeUndefined();
    expect(cause((id) => ended(id, 1, "failed"))).toBeUndefined();
    expect(cause((id) => ended(id, 1, "preempted", { cause: "oom" }))).toBeUndefined();
  });

  it("keeps what the agent measured, and null when it did not say", () => {
    const usage = {
      wallSeconds: 12,
      cpuUserSeconds: 7,
      cpuSystemSeconds: 2,
      peakMemoryMb: 300,
      oomKills: 0,
    };
    const measured = endWith({ command: "work" }, (id) => ({ ...ended(id, 1), usage }));
    expect(measured.attempt.usage).toEqual({
      userSeconds: 7,
      systemSeconds: 2,
      peakMemoryMb: 300,
      wallSeconds: 12,
    });
    expect(endWith({ command: "work" }, (id) => ended(id, 1)).attempt.usage).toBeNull();
  });

  it("is ignored from a host that does not run the attempt, or for an attempt not live", () => {
    const { bench, job, attempt } = placed();
    bench.run((step) => attachHost(step, hello("h2")));
    bench.run((step) => attemptEnded(step, "h2", ended(job.id, 1)));
    bench.run((step) => attemptEnded(step, "h1", ended(job.id, 2)));
    expect(attempt().state).toBe("running");
  });
});

describe("reports in one step", () => {
  it("applies each report alone: one that throws changes nothing, the others stand", () => {
    const { bench, job, attempt } = placed({ command: "work" }, false);
    const errors = bench.run((step) =>
      attemptReports(step, "h1", [
        { kind: "started", jobId: job.id, taskIndex: 0, attempt: 1, pid: 10 },
        { ...ended(job.id, 1), taskIndex: 5 },
      ]),
    ).result;
    expect(errors[0]).toBeNull();
    expect(attempt().state).toBe("running");
    bench.run((step) => attemptReports(step, "h1", [ended(job.id, 1, "failed")]));
    expect(attempt().outcome).toBe("failed");
  });
});

describe("a start that could not be delivered", () => {
  it("ends a starting attempt lost, the system's failure; a running one is left", () => {
    const starting = placed({ command: "work" }, false);
    starting.bench.run((step) => startUndelivered(step, "h1", starting.ref));
    expect(starting.attempt()).toMatchObject({
      outcome: "lost",
      reason: "the start could not be delivered: the agent of h1 was not connected",
    });
    expect(eventsOf(starting.bench, starting.job)).toContainEqual({
      kind: "attempt.lost",
      data: expect.objectContaining({ cause: "undelivered" }),
    });
    const running = placed();
    running.bench.run((step) => startUndelivered(step, "h1", running.ref));
    expect(running.attempt().state).toBe("running");
  });
});

describe("a hello of a host running ranks of a multi-node attempt", () => {
  /** A two-rank job on h1 and h2 (both on h1 with `nodesPerHost: 2`), rank 0 started; rank 1 too unless `started` is false. */
  function gang(spec: Record<string, unknown> = {}, started = true) {
    const bench = new HandlerBench();
    for (const name of ["h1", "h2"]) bench.run((step) => attachHost(step, hello(name, [], 4)));
    const job = bench.run((step) =>
      submitJob(step, {
        id: "1",
        spec: validateJobSpec({ command: "ring", nodes: 2, ...spec }),
        owner: "alice",
        inputs: [],
      }),
    ).result;
    bench.schedule();
    const ref = { jobId: job.id, taskIndex: 0, attempt: 1 };
    const second = spec.nodesPerHost === 2 ? "h1" : "h2";
    bench.run((step) => attemptStarted(step, "h1", { ...ref, rank: 0 }, 5000));
    if (started) bench.run((step) => attemptStarted(step, second, { ...ref, rank: 1 }));
    return { bench, job, ref, attempt: (): AttemptRecord => job.attempt(0, 1)! };
  }

  it("keeps the ranks the agent holds, and ends lost those it does not, which stops the others", () => {
    const { bench, job, ref, attempt } = gang();
    expect(attempt().state).toBe("running");
    expect(bench.run((step) => attachHost(step, hello("h1", [{ ...ref, state: "running" }]))).result).toEqual(
      [],
    );
    expect(attempt().state).toBe("running");
    bench.effects = [];
    bench.run((step) => attachHost(step, hello("h2")));
    expect(attempt().state).toBe("stopping");
    // A stop goes to every host of the attempt.
    expect(bench.stops().map(({ host, jobId, attempt }) => ({ host, jobId, attempt }))).toEqual([
      { host: "h1", jobId: job.id, attempt: 1 },
      { host: "h2", jobId: job.id, attempt: 1 },
    ]);
    expect(bench.events(job.id).find((event) => event.kind === "gang.failed")?.data).toMatchObject({
      rank: 1,
      host: "h2",
      outcome: "lost",
    });
  });

  it("answers a rank that has ended already, to be killed, and sends again the stop of the ranks left", () => {
    const { bench, job, ref, attempt } = gang();
    bench.run((step) => attemptEnded(step, "h2", { ...ended(job.id, 1, "failed"), rank: 1 }));
    expect(attempt().state).toBe("stopping");
    const { result } = bench.run((step) =>
      attachHost(step, hello("h2", [{ ...ref, rank: 1, state: "running" }])),
    );
    expect(result).toEqual([{ ...ref, rank: 1 }]);
    // The same hello naming no rank: every rank of the attempt on the host.
    expect(bench.run((step) => attachHost(step, hello("h2", [{ ...ref, state: "running" }]))).result).toEqual(
      [{ ...ref, rank: undefined }],
    );
    bench.effects = [];
    expect(bench.run((step) => attachHost(step, hello("h1", [{ ...ref, state: "running" }]))).result).toEqual(
      [],
    );
    // A stop goes to every host of the attempt.
    expect(bench.stops().map(({ host, jobId, attempt }) => ({ host, jobId, attempt }))).toEqual([
      { host: "h1", jobId: job.id, attempt: 1 },
      { host: "h2", jobId: job.id, attempt: 1 },
    ]);
    expect(attempt().state).toBe("stopping");
  });

  it("starts a rank whose agent says it runs, its start report lost", () => {
    for (const [said, after] of [
      ["running", "running"],
      ["ended", "starting"],
    ] as const) {
      const { bench, ref, attempt } = gang({}, false);
      expect(attempt().state).toBe("starting");
      expect(bench.run((step) => attachHost(step, hello("h2", [{ ...ref, state: said }]))).result).toEqual(
        [],
      );
      expect(attempt().state).toBe(after);
    }
  });

  it("ends every rank on a host whose agent restarted without them", () => {
    const { bench, job, attempt } = gang({ nodesPerHost: 2 });
    expect(attempt().placement.map((entry) => entry.host)).toEqual(["h1", "h1"]);
    bench.run((step) => attachHost(step, hello("h1")));
    expect(attempt()).toMatchObject({ state: "ended", outcome: "lost" });
    expect(job.tasks[0].state).not.toBe("running");
  });
});

describe("a multi-node attempt's end", () => {
  it("checks rank 0's outputs only, or each rank's under its folder with `outputsFrom: all`", () => {
    const spec = { command: "ring", nodes: 2, outputs: ["out.txt"] };
    const endOf = (extra: Record<string, unknown>, rank: number, outputs: string[]) => {
      const bench = new HandlerBench();
      for (const name of ["h1", "h2"]) bench.run((step) => attachHost(step, hello(name, [], 4)));
      const job = bench.run((step) =>
        submitJob(step, {
          id: "1",
          spec: validateJobSpec({ ...spec, ...extra }),
          owner: "alice",
          inputs: [],
        }),
      ).result;
      bench.schedule();
      const ref = { jobId: job.id, taskIndex: 0, attempt: 1 };
      bench.run((step) => attemptStarted(step, "h1", { ...ref, rank: 0 }, 5000));
      bench.run((step) => attemptStarted(step, "h2", { ...ref, rank: 1 }));
      const host = rank === 0 ? "h1" : "h2";
      bench.run((step) => attemptEnded(step, host, { ...ended(job.id, 1), rank, outputs }));
      return job.attempt(0, 1)!.stop?.reason ?? null;
    };
    // Rank 1's success has no outputs to give back, unless each rank gives its own.
    expect(endOf({}, 1, [])).toBeNull();
    expect(endOf({}, 0, [])).toEqual({
      kind: "gang-failed",
      rank: 0,
      host: "h1",
      outcome: "failed",
      exitCode: 0,
    });
    expect(endOf({}, 0, ["out.txt"])).toBeNull();
    expect(endOf({ outputsFrom: "all" }, 1, ["out.txt"])).toMatchObject({ kind: "gang-failed", rank: 1 });
    expect(endOf({ outputsFrom: "all" }, 1, ["rank-1/out.txt"])).toBeNull();
    expect(endOf({ outputsFrom: "all" }, 0, ["rank-0/out.txt"])).toBeNull();
  });
});

describe("a report from a host the server does not know", () => {
  it("changes nothing", () => {
    const { bench, ref, attempt } = placed({ command: "work" }, false);
    bench.run((step) => attemptStarted(step, "nohost", ref));
    bench.run((step) => startUndelivered(step, "nohost", ref));
    expect(attempt().state).toBe("starting");
  });
});

describe("more of a hello of a host running ranks", () => {
  /** Two ranks on h1 and h2 (or both on h1), both started. */
  function gangOf(spec: Record<string, unknown> = {}) {
    const bench = new HandlerBench();
    for (const name of ["h1", "h2"]) bench.run((step) => attachHost(step, hello(name, [], 4)));
    const job = bench.run((step) =>
      submitJob(step, {
        id: "1",
        spec: validateJobSpec({ command: "ring", nodes: 2, ...spec }),
        owner: "alice",
        inputs: [],
      }),
    ).result;
    bench.schedule();
    const ref = { jobId: job.id, taskIndex: 0, attempt: 1 };
    const second = spec.nodesPerHost === 2 ? "h1" : "h2";
    bench.run((step) => attemptStarted(step, "h1", { ...ref, rank: 0 }, 5000));
    bench.run((step) => attemptStarted(step, second, { ...ref, rank: 1 }));
    bench.effects = [];
    return { bench, job, ref };
  }

  it("keeps a rank named that runs there, sends no stop, and kills a rank named that is not the host's", () => {
    const { bench, job, ref } = gangOf();
    const kill = (host: string, rank: number) =>
      bench.run((step) => attachHost(step, hello(host, [{ ...ref, rank, state: "running" }]))).result;
    expect(kill("h2", 1)).toEqual([]);
    expect(kill("h1", 0)).toEqual([]);
    expect(bench.stops()).toEqual([]);
    expect(job.attempt(0, 1)!.state).toBe("running");
    expect(kill("h2", 0)).toEqual([{ ...ref, rank: 0 }]);
    expect(kill("h2", 7)).toEqual([{ ...ref, rank: 7 }]);
  });

  it("kills a rank named that has ended, though another rank of the attempt on the host runs", () => {
    const { bench, job, ref } = gangOf({ nodesPerHost: 2 });
    bench.run((step) => attemptEnded(step, "h1", { ...ended(job.id, 1, "failed"), rank: 1 }));
    expect(job.attempt(0, 1)!.state).toBe("stopping");
    const { result } = bench.run((step) =>
      attachHost(
        step,
        hello("h1", [
          { ...ref, rank: 1, state: "running" },
          { ...ref, rank: 0, state: "running" },
        ]),
      ),
    );
    expect(result).toEqual([{ ...ref, rank: 1 }]);
  });

  it("ends a rank the agent does not hold as lost, the host's failure", () => {
    const { bench, job } = gangOf();
    bench.run((step) => attachHost(step, hello("h2")));
    const failed = bench.state.jobs.get(job.id)?.attempt(0, 1);
    expect(failed?.state).toBe("stopping");
    bench.run((step) => attemptEnded(step, "h1", { ...ended(job.id, 1, "cancelled"), rank: 0 }));
    expect(bench.events(job.id).find((event) => event.kind === "attempt.lost")?.data).toMatchObject({
      cause: "host",
    });
  });
});

describe("a single-host job's outputs", () => {
  it("are checked at their own paths, whatever `outputsFrom` says", () => {
    const bench = new HandlerBench();
    bench.run((step) => attachHost(step, hello("h1")));
    const job = bench.run((step) =>
      submitJob(step, {
        id: "1",
        spec: validateJobSpec({ command: "work", outputs: ["out.txt"], outputsFrom: "all" }),
        owner: "alice",
        inputs: [],
      }),
    ).result;
    bench.schedule();
    bench.run((step) => attemptStarted(step, "h1", { jobId: job.id, taskIndex: 0, attempt: 1 }));
    bench.run((step) => attemptEnded(step, "h1", { ...ended(job.id, 1), outputs: ["out.txt"] }));
    expect(job.attempt(0, 1)!.outcome).toBe("succeeded");
  });
});

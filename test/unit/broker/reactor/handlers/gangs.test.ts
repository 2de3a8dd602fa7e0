// Multi-node attempts as their ranks report (handlers/gangs.ts), as pure handlers
// (test/helpers/handler-bench.ts): each rank's start (rank 0 first, the others once it names its
// coordinator, outputs for rank 0 or under each rank's folder), the reports a gang lets go (a rank
// not the host's, one past the gang's, one started or ended already), the first failure stopping
// the others once, and where the next attempt goes: back to the healthy hosts, anywhere for the rest.

import { describe, expect, it } from "vitest";
import {
  attachHost,
  attemptEnded,
  attemptStarted,
} from "../../../../../src/broker/reactor/handlers/agent-reports.ts";
import { cancelJob, drainHost } from "../../../../../src/broker/reactor/handlers/control.ts";
import { expireLeases } from "../../../../../src/broker/reactor/handlers/leases.ts";
import { submitJob } from "../../../../../src/broker/reactor/handlers/submit.ts";
import { agentDetached } from "../../../../../src/broker/state/soft-state.ts";
import { validateJobSpec } from "../../../../../src/common/model/job-spec.ts";
import { ended, hello } from "../../../../helpers/agent-messages.ts";
import { HandlerBench } from "../../../../helpers/handler-bench.ts";

/**
 * A bench with h1..h`hosts` (four slots each, at 10.0.0.N) and job "1" of `nodes` ranks placed, its
 * attempt starting (no rank reported yet); `spec` adds to the job file.
 */
function placed(nodes = 2, spec: Record<string, unknown> = {}, hosts = nodes) {
  const bench = new HandlerBench();
  for (let n = 1; n <= hosts; n++)
    bench.run((step) => attachHost(step, { ...hello(`h${n}`, [], 4), address: `10.0.0.${n}` }));
  const job = bench.run((step) =>
    submitJob(step, {
      id: "1",
      spec: validateJobSpec({ command: "ring", nodes, ...spec }),
      owner: "alice",
      inputs: [],
    }),
  ).result;
  bench.schedule();
  const ref = { jobId: job.id, taskIndex: 0, attempt: 1 };
  const attempt = () => job.attempt(0, 1)!;
  return { bench, job, ref, attempt, gang: () => bench.state.liveAttempt(job.id, 0, 1)?.gang };
}

/** The same, every rank started (rank 0 with port 5000), effects cleared. */
function running(nodes = 2, spec: Record<string, unknown> = {}, hosts = nodes) {
  const placedGang = placed(nodes, spec, hosts);
  const { bench, ref, attempt } = placedGang;
  for (const [rank, { host }] of attempt().placement.entries())
    bench.run((step) => attemptStarted(step, host, { ...ref, rank }, rank === 0 ? 5000 : undefined));
  expect(attempt().state).toBe("running");
  bench.effects = [];
  return placedGang;
}

describe("a gang's starts", () => {
  it("rank 0 starts without a coordinator; the others once it names its port, with every rank's address", () => {
    const { bench, ref } = placed(2, { outputs: ["out.txt"] });
    const nodes = [
      { host: "h1", address: "10.0.0.1" },
      { host: "h2", address: "10.0.0.2" },
    ];
    expect(bench.starts().map(({ host, outputs, gang }) => ({ host, outputs, gang }))).toEqual([
      { host: "h1", outputs: ["out.txt"], gang: { rank: 0, nodes, coordinator: null, outputsUnder: null } },
    ]);
    bench.effects = [];
    bench.run((step) => attemptStarted(step, "h1", { ...ref, rank: 0 }, 5000));
    // Rank 1 gives back no outputs: rank 0 does.
    expect(bench.starts().map(({ host, outputs, gang }) => ({ host, outputs, gang }))).toEqual([
      { host: "h2", outputs: [], gang: { rank: 1, nodes, coordinator: "10.0.0.1:5000", outputsUnder: null } },
    ]);
  });

  it("with `outputsFrom: all`, every rank gives back the outputs, under its own folder", () => {
    const { bench, ref } = placed(2, { outputs: ["out.txt"], outputsFrom: "all" });
    bench.run((step) => attemptStarted(step, "h1", { ...ref, rank: 0 }, 5000));
    expect(
      bench.starts().map(({ rank, outputs, gang }) => ({ outputs, under: gang?.outputsUnder, rank })),
    ).toEqual([
      { outputs: ["out.txt"], under: "rank-0", rank: undefined },
      { outputs: ["out.txt"], under: "rank-1", rank: undefined },
    ]);
  });

  it("a report of a rank the host does not run, or past the gang's, changes nothing", () => {
    const { bench, ref, gang } = placed(2);
    bench.effects = [];
    bench.run((step) => attemptStarted(step, "h2", { ...ref, rank: 0 }, 6000));
    bench.run((step) => attemptStarted(step, "h1", { ...ref, rank: 7 }, 6000));
    expect(gang()?.ranks.map((rank) => rank.started)).toEqual([false, false]);
    expect(gang()?.coordinator).toBeNull();
    expect(bench.effects).toEqual([]);
  });

  it("a rank other than 0 started first sends nothing and names no coordinator", () => {
    const { bench, ref, gang, attempt } = placed(2);
    bench.effects = [];
    bench.run((step) => attemptStarted(step, "h2", { ...ref, rank: 1 }));
    expect(bench.effects).toEqual([]);
    expect(gang()?.ranks.map((rank) => rank.started)).toEqual([false, true]);
    bench.run((step) => attemptStarted(step, "h1", { ...ref, rank: 0 }, 5000));
    expect(gang()?.coordinator).toBe("10.0.0.1:5000");
    expect(attempt().state).toBe("running");
  });

  it("rank 0 started by its agent's word, its report lost, is not started again by the late report", () => {
    const { bench, ref, gang } = placed(2);
    // h1's agent comes back saying rank 0 runs: the other ranks start, with no coordinator known.
    bench.run((step) =>
      attachHost(step, { ...hello("h1", [{ ...ref, rank: 0, state: "running" }], 4), address: "10.0.0.1" }),
    );
    expect(bench.starts().at(-1)?.gang).toMatchObject({ rank: 1, coordinator: null });
    bench.effects = [];
    bench.run((step) => attemptStarted(step, "h1", { ...ref, rank: 0 }, 5000));
    expect(bench.effects).toEqual([]);
    expect(gang()?.coordinator).toBeNull();
  });
});

describe("a gang's ends", () => {
  it("a rank's end reported by a host that does not run it, or of a rank past the gang's, changes nothing", () => {
    const { bench, job, attempt, gang } = running(2);
    bench.run((step) => attemptEnded(step, "h2", { ...ended(job.id, 1, "failed"), rank: 0 }));
    bench.run((step) => attemptEnded(step, "h1", { ...ended(job.id, 1, "failed"), rank: 7 }));
    expect(gang()?.ranks.map((rank) => rank.end)).toEqual([null, null]);
    expect(attempt().state).toBe("running");
    expect(bench.effects).toEqual([]);
  });

  it("the first failure stops the other ranks, cancelled naming it, once; a second failure adds nothing", () => {
    const { bench, job, attempt } = running(3);
    bench.run((step) => attemptEnded(step, "h2", { ...ended(job.id, 1, "failed"), rank: 1 }));
    expect(attempt().state).toBe("stopping");
    expect(bench.stops().map(({ host, outcome }) => ({ host, outcome }))).toEqual([
      { host: "h1", outcome: "cancelled" },
      { host: "h2", outcome: "cancelled" },
      { host: "h3", outcome: "cancelled" },
    ]);
    bench.effects = [];
    bench.run((step) => attemptEnded(step, "h3", { ...ended(job.id, 1, "failed"), rank: 2 }));
    expect(bench.events(job.id).filter((event) => event.kind === "gang.failed")).toHaveLength(1);
    expect(bench.stops()).toEqual([]);
  });

  it("a host lost with two ranks ends both; the attempt ends when the last rank elsewhere does", () => {
    const { bench, job, attempt, gang } = running(3, { nodesPerHost: 2 }, 2);
    expect(attempt().placement.map((entry) => entry.host)).toEqual(["h1", "h1", "h2"]);
    // h1 stays silent past the host timeout; h2 does not.
    bench.now += 10_000;
    bench.state.hosts.get("h2")!.lastSeen = bench.now;
    bench.run((step) => expireLeases(step, 3));
    expect(gang()?.ranks.map((rank) => rank.end?.outcome ?? null)).toEqual(["lost", "lost", null]);
    bench.run((step) => attemptEnded(step, "h2", { ...ended(job.id, 1, "cancelled"), rank: 2 }));
    expect(attempt()).toMatchObject({ state: "ended", outcome: "lost" });
  });
});

describe("where a gang's next attempt goes", () => {
  it("back to each host still ready and connected; a rank whose host was lost, or not ready, or not connected, anywhere", () => {
    const cases: [string, (bench: HandlerBench) => void, (string | null)[]][] = [
      ["every host healthy", () => {}, ["h1", "h2", "h3"]],
      // h3's agent restarted without its rank: the host is ready and connected, its rank lost.
      [
        "a rank lost",
        (bench) => bench.run((step) => attachHost(step, { ...hello("h3", [], 4) })),
        ["h1", "h2", null],
      ],
      ["a host drained", (bench) => bench.run((step) => drainHost(step, "h1")), [null, "h2", "h3"]],
      ["a host not connected", (bench) => agentDetached(bench.state, "h2"), ["h1", null, "h3"]],
    ];
    for (const [name, meanwhile, previous] of cases) {
      const { bench, job, ref } = running(3);
      meanwhile(bench);
      // Rank 0 fails, which stops the others; each then ends.
      for (const [rank, host] of ["h1", "h2", "h3"].entries())
        if (job.attempt(0, 1)!.state !== "ended")
          bench.run((step) =>
            attemptEnded(step, host, { ...ended(ref.jobId, 1, rank === 0 ? "failed" : "cancelled"), rank }),
          );
      expect([name, job.attempt(0, 1)!.state, job.gangRestart?.previous]).toEqual([name, "ended", previous]);
      expect([name, job.gangRestart?.avoid]).toEqual([
        name,
        ["h1", "h2", "h3"].filter((_, i) => previous[i] === null),
      ]);
    }
  });

  it("a cancel of the gang stops it once; a rank failing afterwards sends no stop again", () => {
    const { bench, job, attempt } = running(2);
    bench.run((step) => cancelJob(step, job.id));
    expect(bench.stops()).toHaveLength(2);
    bench.effects = [];
    bench.run((step) => attemptEnded(step, "h2", { ...ended(job.id, 1, "failed"), rank: 1 }));
    expect(bench.stops()).toEqual([]);
    expect(attempt().stop?.outcome).toBe("cancelled");
  });
});

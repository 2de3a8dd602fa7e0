// Multi-node attempts through the reactor, on a real SQLite store: rank 0 starts first and brings
// the coordinator's port, then the other ranks start with it; a failed rank stops the others and
// the attempt ends naming it; a lost host's rank is replaced from the restart pool while the
// healthy ranks go back to their hosts, and never before the other ranks confirmed their stop.

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import type { JobEntry } from "../../../../src/broker/state/job-entry.ts";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import type { HelloMessage } from "../../../../src/common/protocol/messages.ts";
import { ended, facts, Harness, hello, settle, submitOn } from "../../../helpers/core-harness.ts";

let harness: Harness;

beforeEach(async () => {
  harness = new Harness();
  await harness.start();
});

afterEach(async () => {
  await harness.close();
});

function host(name: string, pool = "default"): HelloMessage {
  return {
    ...hello(name, [], 1),
    pool,
    facts: facts(name, { pool, slotsFree: 1 }),
    address: `10.0.0.${name.at(-1)}`,
  };
}

async function gang(spec: Record<string, unknown> = {}): Promise<JobEntry> {
  const { core } = harness;
  for (const name of ["h1", "h2", "h3"]) await core.agents.attachHost(host(name));
  const job = await submitOn(core, validateJobSpec({ command: "ring", nodes: 3, ...spec }), "alice", []);
  await settle();
  return job;
}

/** Starts every rank of the attempt as their agents would: rank 0 first with the coordinator's port. */
async function startAll(job: JobEntry, attempt: number): Promise<string[]> {
  const { core } = harness;
  const rank0 = harness.starts().find((start) => start.attempt === attempt && start.gang?.rank === 0)!;
  await core.agents.attemptStarted(rank0.host, job.id, 0, attempt, 4567);
  await settle();
  const others = harness.starts().filter((start) => start.attempt === attempt && start.gang!.rank > 0);
  for (const start of others) await core.agents.attemptStarted(start.host, job.id, 0, attempt);
  await settle();
  return [rank0.host, ...others.map((start) => start.host)];
}

describe("gangs through the reactor", () => {
  it("starts rank 0 alone, then the others with rank 0's coordinator; runs once all have started", async () => {
    const job = await gang();
    const first = harness.starts();
    expect(first).toHaveLength(1);
    expect(first[0].gang).toStrictEqual({
      rank: 0,
      nodes: [
        { host: "h1", address: "10.0.0.1" },
        { host: "h2", address: "10.0.0.2" },
        { host: "h3", address: "10.0.0.3" },
      ],
      coordinator: null,
      outputsUnder: null,
    });
    await harness.core.agents.attemptStarted("h1", job.id, 0, 1, 4567);
    await settle();
    const all = harness.starts();
    expect(all.map((start) => [start.host, start.gang?.rank, start.gang?.coordinator])).toStrictEqual([
      ["h1", 0, null],
      ["h2", 1, "10.0.0.1:4567"],
      ["h3", 2, "10.0.0.1:4567"],
    ]);
    expect(job.latestAttempt(0)!.state).toBe("starting");
    await harness.core.agents.attemptStarted("h2", job.id, 0, 1);
    await harness.core.agents.attemptStarted("h3", job.id, 0, 1);
    expect(job.latestAttempt(0)!.state).toBe("running");
    expect(job.latestAttempt(0)!.placement).toStrictEqual([
      { host: "h1", rank: 0 },
      { host: "h2", rank: 1 },
      { host: "h3", rank: 2 },
    ]);
  });

  it("succeeds once every rank has succeeded", async () => {
    const job = await gang();
    await startAll(job, 1);
    await harness.core.agents.attemptEnded("h2", ended(job.id, 1));
    await harness.core.agents.attemptEnded("h1", ended(job.id, 1));
    expect(job.record.state).toBe("running");
    await harness.core.agents.attemptEnded("h3", ended(job.id, 1));
    expect(job.record.state).toBe("succeeded");
  });

  it("a rank that exits 1 stops the others; the attempt fails naming it once they have ended", async () => {
    const job = await gang();
    await startAll(job, 1);
    await harness.core.agents.attemptEnded("h2", ended(job.id, 1, "failed"));
    await settle();
    expect(
      harness
        .stops()
        .map((stop) => stop.host)
        .sort(),
    ).toStrictEqual(["h1", "h2", "h3"]);
    expect(job.latestAttempt(0)!.state).toBe("stopping");
    await harness.core.agents.attemptEnded("h1", ended(job.id, 1, "cancelled"));
    expect(job.record.state).toBe("running");
    await harness.core.agents.attemptEnded("h3", ended(job.id, 1, "cancelled"));
    const attempt = job.latestAttempt(0)!;
    expect(attempt.outcome).toBe("failed");
    expect(attempt.reason).toBe("rank 1 on h2: failed");
    expect(job.record.state).toBe("failed");
  });

  it("a lost host's rank is replaced from the restart pool; the healthy ranks go back to their hosts", async () => {
    const { core } = harness;
    await core.agents.attachHost(host("s4", "spares"));
    const job = await gang({ restartPool: "spares" });
    const ranks = await startAll(job, 1);
    expect(ranks).not.toContain("s4");
    // h2 falls silent: its rank is lost, and the others are asked to stop.
    harness.now += 1000;
    for (const name of ["h1", "h3", "s4"]) core.touch(name);
    harness.now += 2500;
    for (const name of ["h1", "h3", "s4"]) core.touch(name);
    core.reactor.tick();
    await settle();
    expect(job.latestAttempt(0)!.state).toBe("stopping");
    // No replacement while the other ranks may still run.
    expect(harness.starts().filter((start) => start.attempt === 2)).toStrictEqual([]);
    await core.agents.attemptEnded("h1", ended(job.id, 1, "cancelled"));
    await core.agents.attemptEnded("h3", ended(job.id, 1, "cancelled"));
    await settle();
    const attempt = job.latestAttempt(0)!;
    expect(attempt.number).toBe(2);
    expect(attempt.placement).toStrictEqual([
      { host: "h1", rank: 0 },
      { host: "s4", rank: 1 },
      { host: "h3", rank: 2 },
    ]);
    const previous = job.attempt(0, 1)!;
    expect(previous.outcome).toBe("lost");
    expect(previous.reason).toMatch(/^rank 1 on h2: host h2 silent/);
    expect(job.tasks[0].losses).toBe(1);
    expect(job.tasks[0].failures).toBe(0);
  });

  it("after a server restart, a gang that lost a rank still goes back to its healthy hosts", async () => {
    const { core } = harness;
    await core.agents.attachHost(host("s4", "spares"));
    const job = await gang({ restartPool: "spares", retry: { maxAttempts: 1, backoffSeconds: 0 } });
    await startAll(job, 1);
    harness.now += 3500;
    for (const name of ["h1", "h3", "s4"]) core.touch(name);
    core.reactor.tick();
    await core.agents.attemptEnded("h1", ended(job.id, 1, "cancelled"));
    // The server goes down before the next attempt could be placed (its agents are away).
    for (const name of ["h1", "h3", "s4"]) core.detachHost(name);
    await core.agents.attemptEnded("h3", ended(job.id, 1, "cancelled"));
    await settle();
    expect(job.latestAttempt(0)!.number).toBe(1);
    const restarted = await harness.restart();
    const again = restarted.read.job(job.id);
    expect(again.gangRestart).toStrictEqual({ previous: ["h1", null, "h3"], avoid: ["h2"] });
  });

  it("two ranks on one host (nodesPerHost 2) start, end and are lost rank by rank", async () => {
    const { core } = harness;
    for (const name of ["h1", "h2"])
      await core.agents.attachHost({ ...host(name), slots: 2, facts: facts(name, { slotsFree: 2 }) });
    const job = await submitOn(
      core,
      validateJobSpec({ command: "ring", nodes: 4, nodesPerHost: 2 }),
      "alice",
      [],
    );
    await settle();
    expect(job.latestAttempt(0)!.placement.map((each) => each.host)).toStrictEqual(["h1", "h1", "h2", "h2"]);
    await core.agents.attemptStarted("h1", job.id, 0, 1, 4567, 0);
    await settle();
    expect(harness.starts().map((start) => [start.host, start.gang?.rank])).toStrictEqual([
      ["h1", 0],
      ["h1", 1],
      ["h2", 2],
      ["h2", 3],
    ]);
    for (const [name, rank] of [
      ["h1", 1],
      ["h2", 2],
      ["h2", 3],
    ] as const)
      await core.agents.attemptStarted(name, job.id, 0, 1, undefined, rank);
    expect(job.latestAttempt(0)!.state).toBe("running");
    expect(core.read.listHosts().map((each) => [each.name, each.slotsFree])).toStrictEqual([
      ["h1", 0],
      ["h2", 0],
    ]);
    // Rank 3 ends first; h2's other rank is still counted.
    await core.agents.attemptEnded("h2", { ...ended(job.id, 1), rank: 3 });
    expect(job.latestAttempt(0)!.state).toBe("running");
    for (const [name, rank] of [
      ["h1", 0],
      ["h1", 1],
      ["h2", 2],
    ] as const)
      await core.agents.attemptEnded(name, { ...ended(job.id, 1), rank });
    expect(job.record.state).toBe("succeeded");
    expect(core.read.listHosts().map((each) => each.slotsFree)).toStrictEqual([2, 2]);
  });

  it("a rank that fails because a peer's host died does not make it the application's failure", async () => {
    const { core } = harness;
    await core.agents.attachHost(host("s4", "spares"));
    const job = await gang({ restartPool: "spares" });
    await startAll(job, 1);
    // h2 dies; rank 0 on h1 loses its connection to it and exits 1 before h2's lease runs out.
    await core.agents.attemptEnded("h1", ended(job.id, 1, "failed"));
    await core.agents.attemptEnded("h3", ended(job.id, 1, "cancelled"));
    expect(job.latestAttempt(0)!.number).toBe(1);
    harness.now += 1000;
    for (const name of ["h1", "h3", "s4"]) core.touch(name);
    harness.now += 2500;
    for (const name of ["h1", "h3", "s4"]) core.touch(name);
    core.reactor.tick();
    await settle();
    const previous = job.attempt(0, 1)!;
    expect(previous.outcome).toBe("lost");
    expect(previous.reason).toMatch(/^rank 1 on h2: /);
    expect(job.tasks[0].failures).toBe(0);
    expect(job.latestAttempt(0)!.placement.map((each) => each.host)).toStrictEqual(["h1", "s4", "h3"]);
  });
});

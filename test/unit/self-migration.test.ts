// Self-migration in the reactor, on a real SQLite store: requirements a running job writes into its
// requirements file (sent with heartbeats) replace the job's own, are kept across a restart, move
// the job off a host that no longer satisfies them; invalid ones are reported once and ignored.

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { validateJobSpec } from "../../src/model/job-spec.ts";
import type { HelloMessage } from "../../src/protocol/messages.ts";
import type { JobEntry } from "../../src/state/job-entry.ts";
import { ended, facts, Harness, hello, settle, submitOn } from "../helpers/core-harness.ts";

let harness: Harness;

function zoneHost(name: string, zone: string): HelloMessage {
  const labels = { zone };
  return { ...hello(name), labels, facts: facts(name, { labels }) };
}

beforeEach(async () => {
  harness = new Harness();
  await harness.start();
  await harness.core.agents.attachHost(zoneHost("za", "a"));
  await harness.core.agents.attachHost(zoneHost("zb", "b"));
});

afterEach(async () => {
  await harness.close();
});

async function runningInZoneA(spec: Record<string, unknown> = {}): Promise<JobEntry> {
  const job = await submitOn(
    harness.core,
    validateJobSpec({ command: "sleep 100", requirements: 'host.labels.zone == "a"', ...spec }),
    "alice",
    [],
  );
  await settle();
  expect(harness.starts()).toEqual([expect.objectContaining({ jobId: job.id, host: "za", attempt: 1 })]);
  await harness.core.agents.attemptStarted("za", job.id, 0, 1);
  harness.sent = [];
  return job;
}

/** A heartbeat from `host` carrying what the attempt wrote in its requirements file. */
async function write(host: string, job: JobEntry, attempt: number, text: string, taskIndex = 0) {
  harness.now += 1000;
  await harness.core.heartbeat(
    host,
    facts(host, { labels: { zone: host.slice(1) } }),
    [],
    [{ jobId: job.id, taskIndex, attempt, text }],
  );
  await settle();
}

async function kinds(job: JobEntry): Promise<string[]> {
  return (await harness.store.events(job.id)).map((event) => event.kind);
}

describe("self-migration", () => {
  it("new requirements the host no longer satisfies move the job to a host that does", async () => {
    const job = await runningInZoneA();
    await write("za", job, 1, 'host.labels.zone == "b"\n');
    expect(harness.stops()).toEqual([
      expect.objectContaining({
        host: "za",
        attempt: 1,
        outcome: "migrated",
        reason: 'requirements changed: host.labels.zone == "b"',
      }),
    ]);
    const events = await harness.store.events(job.id);
    expect(events.find((event) => event.kind === "requirements.changed")).toMatchObject({
      message:
        'attempt 1 wrote new requirements: host.labels.zone == "b" (they replace host.labels.zone == "a")',
      data: { task: 0, attempt: 1, host: "za", requirements: 'host.labels.zone == "b"' },
    });
    expect(events.find((event) => event.kind === "requirements.migrate")).toMatchObject({
      data: {
        host: "za",
        requirements: 'host.labels.zone == "b"',
        why: "requirements are false on this host",
      },
    });
    expect(job.record.dynamicRequirements).toBe('host.labels.zone == "b"');

    // The same text again (every heartbeat carries it) changes nothing more.
    await write("za", job, 1, 'host.labels.zone == "b"');
    expect(harness.stops()).toHaveLength(1);

    await harness.core.agents.attemptEnded("za", ended(job.id, 1, "migrated"));
    await settle();
    expect(harness.starts()).toEqual([expect.objectContaining({ host: "zb", attempt: 2, restarted: false })]);
    await harness.core.agents.attemptStarted("zb", job.id, 0, 2);
    // The restarted job writes the same again: already the job's requirements, nothing happens.
    const before = (await kinds(job)).length;
    await write("zb", job, 2, 'host.labels.zone == "b"');
    expect(harness.stops()).toHaveLength(1);
    expect((await kinds(job)).length).toBe(before);
  });

  it("the new requirements are kept across a server restart and used for later placements", async () => {
    const job = await runningInZoneA({ retry: { maxAttempts: 3, backoffSeconds: 0 } });
    await write("za", job, 1, 'host.labels.zone == "b"');
    const core = await harness.restart();
    expect(core.read.job(job.id).requirements?.source).toBe('host.labels.zone == "b"');
    await core.agents.attachHost(zoneHost("zb", "b"));
    // The agent of zone a comes back with the attempt, which was asked to stop before the restart.
    await core.agents.attachHost({
      ...zoneHost("za", "a"),
      attempts: [{ jobId: job.id, taskIndex: 0, attempt: 1, state: "running" }],
    });
    expect(harness.stops().at(-1)).toMatchObject({
      host: "za",
      reason: 'requirements changed: host.labels.zone == "b"',
    });
    harness.sent = [];
    await core.agents.attemptEnded("za", ended(job.id, 1, "migrated"));
    await settle();
    expect(harness.starts()).toEqual([expect.objectContaining({ host: "zb", attempt: 2 })]);
    // And after a failure there, a retry does not go back to zone a.
    await core.agents.attemptStarted("zb", job.id, 0, 2);
    harness.sent = [];
    await core.agents.attemptEnded("zb", ended(job.id, 2, "failed"));
    await settle();
    expect(harness.starts()).toEqual([expect.objectContaining({ host: "zb", attempt: 3 })]);
  });

  it("requirements the host still satisfies replace the job's own without moving it", async () => {
    const job = await runningInZoneA();
    await write("za", job, 1, 'host.labels.zone == "a" && host.memFreeMb >= 1024.0');
    expect(harness.stops()).toEqual([]);
    expect(await kinds(job)).toContain("requirements.changed");
    expect(await kinds(job)).not.toContain("requirements.migrate");
    expect(job.requirements?.source).toBe('host.labels.zone == "a" && host.memFreeMb >= 1024.0');
  });

  it.each([
    ["a syntax error", "host.labels.zone ==", "requirements file: "],
    ["an unknown host fact", "host.gpus > 0.0", "gpus"],
    ["not a boolean", "host.speed", "must be a boolean expression"],
    ["too long", `host.name == "${"x".repeat(5000)}"`, "longer than 4096 characters"],
  ])("an invalid expression (%s) is reported once in the events and ignored", async (_, text, says) => {
    const job = await runningInZoneA();
    await write("za", job, 1, text);
    await write("za", job, 1, text);
    const refused = (await harness.store.events(job.id)).filter(
      (event) => event.kind === "requirements.refused",
    );
    expect(refused).toHaveLength(1);
    expect(refused[0].message.startsWith("requirements file: ")).toBe(true);
    expect(refused[0].message).toContain(says);
    expect(refused[0].data).toMatchObject({ task: 0, attempt: 1, host: "za" });
    expect(harness.stops()).toEqual([]);
    expect(job.record.dynamicRequirements).toBeNull();
    expect(job.requirements?.source).toBe('host.labels.zone == "a"');
    // A valid text written after it still counts.
    await write("za", job, 1, 'host.labels.zone == "b"');
    expect(harness.stops()).toEqual([expect.objectContaining({ outcome: "migrated" })]);
  });

  it("remembers the latest 64 refused texts only: a job writing new ones does not grow the server", async () => {
    const job = await runningInZoneA();
    for (let i = 0; i <= 64; i++) await write("za", job, 1, `"${i}"`);
    // "0" was let go for the 65th text and is reported again; "64" is remembered.
    await write("za", job, 1, '"0"');
    await write("za", job, 1, '"64"');
    const refused = (await harness.store.events(job.id)).filter(
      (event) => event.kind === "requirements.refused",
    );
    expect(refused.map((event) => event.data.requirements)).toEqual([
      ...Array.from({ length: 65 }, (_, i) => `"${i}"`),
      '"0"',
    ]);
  });

  it("an empty file is ignored", async () => {
    const job = await runningInZoneA();
    await write("za", job, 1, "  \n");
    expect(await kinds(job)).not.toContain("requirements.refused");
    expect(harness.stops()).toEqual([]);
  });

  it("a report for an attempt that is not on the reporting host changes nothing", async () => {
    const job = await runningInZoneA();
    await write("zb", job, 1, 'host.labels.zone == "b"');
    await write("za", job, 7, 'host.labels.zone == "b"');
    expect(harness.stops()).toEqual([]);
    expect(job.record.dynamicRequirements).toBeNull();
  });

  it("the new requirements are the job's: every running task on a host that no longer satisfies them moves", async () => {
    await harness.core.agents.attachHost({ ...zoneHost("za", "a"), slots: 2 });
    const job = await submitOn(
      harness.core,
      validateJobSpec({ command: "sleep 100", requirements: 'host.labels.zone == "a"', array: { count: 2 } }),
      "alice",
      [],
    );
    await settle();
    expect(harness.starts().map((start) => start.host)).toEqual(["za", "za"]);
    for (const index of [0, 1]) await harness.core.agents.attemptStarted("za", job.id, index, 1);
    harness.sent = [];
    await write("za", job, 1, 'host.labels.zone == "b"', 1);
    expect(
      harness
        .stops()
        .map((stop) => `${stop.taskIndex}:${stop.outcome}`)
        .sort(),
    ).toEqual(["0:migrated", "1:migrated"]);
  });
});

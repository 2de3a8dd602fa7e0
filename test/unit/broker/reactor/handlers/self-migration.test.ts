// Self-migration as handlers run it, with a clock the test moves (no store, no timers):
// requirements a running job writes into its requirements file (sent with heartbeats) replace the
// job's own, are kept across a restart (the state rebuilt from the recorded changes), move the job
// off a host that no longer satisfies them; invalid ones are reported once and ignored.

import { beforeEach, describe, expect, it } from "vitest";
import {
  attachHost,
  attemptEnded,
  attemptStarted,
} from "../../../../../src/broker/reactor/handlers/agent-reports.ts";
import { cancelJob, cancelTasks, holdJob } from "../../../../../src/broker/reactor/handlers/control.ts";
import { followRequirementsFiles } from "../../../../../src/broker/reactor/handlers/requirements-file.ts";
import { submitJob } from "../../../../../src/broker/reactor/handlers/submit.ts";
import { handle } from "../../../../../src/broker/reactor/step.ts";
import type { JobEntry } from "../../../../../src/broker/state/job-entry.ts";
import { validateJobSpec } from "../../../../../src/common/model/job-spec.ts";
import type { HelloMessage } from "../../../../../src/common/protocol/messages.ts";
import { ended, facts, hello } from "../../../../helpers/agent-messages.ts";
import { HandlerBench } from "../../../../helpers/handler-bench.ts";

let bench: HandlerBench;

function zoneHost(name: string, zone: string): HelloMessage {
  const labels = { zone };
  return { ...hello(name), labels, facts: facts(name, { labels }) };
}

/** The broker's agents' and users' requests, each one handler step (then the passes it asked for). */
const requests = {
  attachHost(message: HelloMessage): void {
    bench.run((step) => attachHost(step, message));
    bench.settle();
  },
  submit(spec: ReturnType<typeof validateJobSpec>): JobEntry {
    const id = String(bench.state.nextSeq);
    const job = bench.run((step) => submitJob(step, { id, spec, owner: "alice", inputs: [] })).result;
    bench.settle();
    return job;
  },
  attemptStarted(host: string, jobId: string, taskIndex: number, attempt: number): void {
    bench.run((step) => attemptStarted(step, host, { jobId, taskIndex, attempt }));
  },
  attemptEnded(host: string, report: ReturnType<typeof ended>): void {
    bench.run((step) => attemptEnded(step, host, report));
    bench.settle();
  },
};

beforeEach(() => {
  bench = new HandlerBench();
  requests.attachHost(zoneHost("za", "a"));
  requests.attachHost(zoneHost("zb", "b"));
});

function runningInZoneA(spec: Record<string, unknown> = {}): JobEntry {
  const job = requests.submit(
    validateJobSpec({ command: "sleep 100", requirements: 'host.labels.zone == "a"', ...spec }),
  );
  expect(bench.starts()).toEqual([expect.objectContaining({ jobId: job.id, host: "za", attempt: 1 })]);
  requests.attemptStarted("za", job.id, 0, 1);
  bench.effects = [];
  return job;
}

/** A heartbeat from `host` carrying what the attempt wrote in its requirements file. */
function write(host: string, job: JobEntry, attempt: number, text: string, taskIndex = 0) {
  bench.now += 1000;
  bench.heartbeat(
    host,
    facts(host, { labels: { zone: host.slice(1) } }),
    [],
    [{ jobId: job.id, taskIndex, attempt, text }],
  );
  bench.settle();
}

function kinds(job: JobEntry): string[] {
  return bench.events(job.id).map((event) => event.kind);
}

describe("self-migration", () => {
  it("new requirements the host no longer satisfies move the job to a host that does", () => {
    const job = runningInZoneA();
    write("za", job, 1, 'host.labels.zone == "b"\n');
    expect(bench.stops()).toEqual([
      expect.objectContaining({
        host: "za",
        attempt: 1,
        outcome: "migrated",
        reason: 'requirements changed: host.labels.zone == "b"',
      }),
    ]);
    const events = bench.events(job.id);
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
    write("za", job, 1, 'host.labels.zone == "b"');
    expect(bench.stops()).toHaveLength(1);

    requests.attemptEnded("za", ended(job.id, 1, "migrated"));
    expect(bench.starts()).toEqual([expect.objectContaining({ host: "zb", attempt: 2, restarted: false })]);
    requests.attemptStarted("zb", job.id, 0, 2);
    // The restarted job writes the same again: already the job's requirements, nothing happens.
    const before = kinds(job).length;
    write("zb", job, 2, 'host.labels.zone == "b"');
    expect(bench.stops()).toHaveLength(1);
    expect(kinds(job).length).toBe(before);
  });

  it("the new requirements are kept across a server restart and used for later placements", () => {
    const job = runningInZoneA({ retry: { maxAttempts: 3, backoffSeconds: 0 } });
    write("za", job, 1, 'host.labels.zone == "b"');
    bench = bench.restart();
    expect(bench.state.jobs.get(job.id)?.requirements?.source).toBe('host.labels.zone == "b"');
    requests.attachHost(zoneHost("zb", "b"));
    // The agent of zone a comes back with the attempt, which was asked to stop before the restart.
    requests.attachHost({
      ...zoneHost("za", "a"),
      attempts: [{ jobId: job.id, taskIndex: 0, attempt: 1, state: "running" }],
    });
    expect(bench.stops().at(-1)).toMatchObject({
      host: "za",
      reason: 'requirements changed: host.labels.zone == "b"',
    });
    bench.effects = [];
    requests.attemptEnded("za", ended(job.id, 1, "migrated"));
    expect(bench.starts()).toEqual([expect.objectContaining({ host: "zb", attempt: 2 })]);
    // And after a failure there, a retry does not go back to zone a.
    requests.attemptStarted("zb", job.id, 0, 2);
    bench.effects = [];
    requests.attemptEnded("zb", ended(job.id, 2, "failed"));
    expect(bench.starts()).toEqual([expect.objectContaining({ host: "zb", attempt: 3 })]);
  });

  it("requirements the host still satisfies replace the job's own without moving it", () => {
    const job = runningInZoneA();
    write("za", job, 1, 'host.labels.zone == "a" && host.memFreeMb >= 1024.0');
    expect(bench.stops()).toEqual([]);
    expect(kinds(job)).toContain("requirements.changed");
    expect(kinds(job)).not.toContain("requirements.migrate");
    expect(job.requirements?.source).toBe('host.labels.zone == "a" && host.memFreeMb >= 1024.0');
  });

  it.each([
    ["a syntax error", "host.labels.zone ==", "requirements file: "],
    ["an unknown host fact", "host.gpus > 0.0", "gpus"],
    ["not a boolean", "host.speed", "must be a boolean expression"],
    ["too long", `host.name == "${"x".repeat(5000)}"`, "longer than 4096 characters"],
  ])("an invalid expression (%s) is reported once in the events and ignored", (_, text, says) => {
    const job = runningInZoneA();
    write("za", job, 1, text);
    write("za", job, 1, text);
    const refused = bench.events(job.id).filter((event) => event.kind === "requirements.refused");
    expect(refused).toHaveLength(1);
    expect(refused[0].message.startsWith("requirements file: ")).toBe(true);
    expect(refused[0].message).toContain(says);
    expect(refused[0].data).toMatchObject({ task: 0, attempt: 1, host: "za" });
    expect(bench.stops()).toEqual([]);
    expect(job.record.dynamicRequirements).toBeNull();
    expect(job.requirements?.source).toBe('host.labels.zone == "a"');
    // A valid text written after it still counts.
    write("za", job, 1, 'host.labels.zone == "b"');
    expect(bench.stops()).toEqual([expect.objectContaining({ outcome: "migrated" })]);
  });

  it("remembers the latest 64 refused texts only: a job writing new ones does not grow the server", () => {
    const job = runningInZoneA();
    for (let i = 0; i <= 64; i++) write("za", job, 1, `"${i}"`);
    // "0" was let go for the 65th text and is reported again; "64" is remembered.
    write("za", job, 1, '"0"');
    write("za", job, 1, '"64"');
    const refused = bench.events(job.id).filter((event) => event.kind === "requirements.refused");
    expect(refused.map((event) => event.data.requirements)).toEqual([
      ...Array.from({ length: 65 }, (_, i) => `"${i}"`),
      '"0"',
    ]);
  });

  it("an empty file is ignored", () => {
    const job = runningInZoneA();
    write("za", job, 1, "  \n");
    expect(kinds(job)).not.toContain("requirements.refused");
    expect(bench.stops()).toEqual([]);
  });

  it("a report for an attempt that is not on the reporting host changes nothing", () => {
    const job = runningInZoneA();
    write("zb", job, 1, 'host.labels.zone == "b"');
    write("za", job, 7, 'host.labels.zone == "b"');
    expect(bench.stops()).toEqual([]);
    expect(job.record.dynamicRequirements).toBeNull();
  });

  it("the new requirements are the job's: every running task on a host that no longer satisfies them moves", () => {
    requests.attachHost({ ...zoneHost("za", "a"), slots: 2 });
    const job = requests.submit(
      validateJobSpec({ command: "sleep 100", requirements: 'host.labels.zone == "a"', array: { count: 2 } }),
    );
    expect(bench.starts().map((start) => start.host)).toEqual(["za", "za"]);
    for (const index of [0, 1]) requests.attemptStarted("za", job.id, index, 1);
    bench.effects = [];
    write("za", job, 1, 'host.labels.zone == "b"', 1);
    expect(
      bench
        .stops()
        .map((stop) => `${stop.taskIndex}:${stop.outcome}`)
        .sort(),
    ).toEqual(["0:migrated", "1:migrated"]);
  });

  it("names the requirements replaced: none for a job that had none", () => {
    const job = requests.submit(validateJobSpec({ command: "sleep 100" }));
    const host = bench.starts()[0].host;
    requests.attemptStarted(host, job.id, 0, 1);
    write(host, job, 1, `host.name == "${host}"`);
    expect(bench.events(job.id).find((event) => event.kind === "requirements.changed")).toMatchObject({
      message: `attempt 1 wrote new requirements: host.name == "${host}" (they replace none)`,
      data: { previous: null, array: false },
    });
  });

  it("says a single job's move is not an array's", () => {
    const job = runningInZoneA();
    write("za", job, 1, 'host.labels.zone == "b"');
    expect(bench.events(job.id).find((event) => event.kind === "requirements.migrate")?.data.array).toBe(
      false,
    );
  });

  it("says whether the job is an array", () => {
    requests.attachHost({ ...zoneHost("za", "a"), slots: 2 });
    const array = requests.submit(
      validateJobSpec({ command: "sleep 100", requirements: 'host.labels.zone == "a"', array: { count: 2 } }),
    );
    for (const index of [0, 1]) requests.attemptStarted("za", array.id, index, 1);
    write("za", array, 1, 'host.labels.zone == "b"', 1);
    const data = (kind: string) =>
      bench
        .events(array.id)
        .filter((event) => event.kind === kind)
        .map((event) => event.data.array);
    expect(data("requirements.changed")).toEqual([true]);
    expect(data("requirements.migrate")).toEqual([true, true]);
  });

  it("a text of 4096 characters exactly is taken", () => {
    const job = runningInZoneA();
    const text = `host.name != "${"x".repeat(4096 - 'host.name != ""'.length)}"`;
    expect(text).toHaveLength(4096);
    write("za", job, 1, text);
    expect(job.record.dynamicRequirements).toBe(text);
  });

  it("a refused text longer than the limit is named by its first 4096 characters", () => {
    const job = runningInZoneA();
    write("za", job, 1, `host.name == "${"x".repeat(5000)}"`);
    const refused = bench.events(job.id).find((event) => event.kind === "requirements.refused");
    expect(String(refused?.data.requirements)).toHaveLength(4096);
  });

  it("what an attempt stopping writes is not acted on: held, or cancelled", () => {
    for (const stop of [holdJob, cancelJob]) {
      bench = new HandlerBench();
      requests.attachHost(zoneHost("za", "a"));
      requests.attachHost(zoneHost("zb", "b"));
      const job = runningInZoneA();
      bench.run((step) => stop(step, job.id));
      expect(job.attempt(0, 1)!.state).toBe("stopping");
      write("za", job, 1, 'host.labels.zone == "b"');
      expect(job.record.dynamicRequirements).toBeNull();
      expect(kinds(job)).not.toContain("requirements.changed");
    }
  });

  it("moves only the attempts starting or running: one being stopped is left to its stop", () => {
    requests.attachHost({ ...zoneHost("za", "a"), slots: 3 });
    const job = requests.submit(
      validateJobSpec({ command: "sleep 100", requirements: 'host.labels.zone == "a"', array: { count: 3 } }),
    );
    // Task 0 runs, task 1 is still starting, task 2 is being stopped by a cancel of it.
    for (const index of [0, 2]) requests.attemptStarted("za", job.id, index, 1);
    bench.run((step) => cancelTasks(step, job.id, [2]));
    bench.effects = [];
    write("za", job, 1, 'host.labels.zone == "b"');
    const moved = bench
      .events(job.id)
      .filter((event) => event.kind === "requirements.migrate")
      .map((event) => event.data.task);
    expect(moved).toEqual([0, 1]);
    expect(bench.stops().map((stop) => stop.taskIndex)).toEqual([0, 1]);
  });

  it("a text whose step was taken back is acted on when it comes again, refused or not", () => {
    const job = runningInZoneA();
    const report = (text: string) => [{ jobId: job.id, taskIndex: 0, attempt: 1, text }];
    for (const text of ['host.labels.zone == "b"', "host.gpus > 0.0"])
      expect(() =>
        handle(
          bench.state,
          bench.now,
          (step) => {
            followRequirementsFiles(step, "za", report(text));
            throw new Error("after");
          },
          () => 0.5,
        ),
      ).toThrow("after");
    expect(job.record.dynamicRequirements).toBeNull();
    write("za", job, 1, "host.gpus > 0.0");
    expect(kinds(job)).toContain("requirements.refused");
    write("za", job, 1, 'host.labels.zone == "b"');
    expect(job.record.dynamicRequirements).toBe('host.labels.zone == "b"');
  });
});

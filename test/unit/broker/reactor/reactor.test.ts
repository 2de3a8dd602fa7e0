// The reshaped core's rules, on a real SQLite store: recorded stop and migration intents survive
// reconnects and restarts, failure classes at the edges, terms fence a deposed server.

import { spawn } from "node:child_process";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { applyPlan } from "../../../../src/broker/reactor/handlers/apply-plan.ts";
import type { JobEntry } from "../../../../src/broker/state/job-entry.ts";
import { SqliteStore } from "../../../../src/broker/store/sqlite.ts";
import { type Change, StaleTermError } from "../../../../src/broker/store/store.ts";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import type { StopIntent } from "../../../../src/common/model/records.ts";
import { SYSTEM_FAILURE_LIMIT } from "../../../../src/common/model/task-outcome.ts";
import { ended, Harness, hello, settle, submitOn } from "../../../helpers/core-harness.ts";

let harness: Harness;

beforeEach(async () => {
  harness = new Harness();
  await harness.start();
});

afterEach(async () => {
  await harness.close();
});

async function running(command = "sleep 100", host = "h1"): Promise<JobEntry> {
  const { core } = harness;
  const job = await submitOn(core, validateJobSpec({ command }), "alice", []);
  await settle();
  const start = harness.starts().find((each) => each.jobId === job.id);
  expect(start).toMatchObject({ host, attempt: 1 });
  await core.agents.attemptStarted(host, job.id, 0, 1);
  return job;
}

const held = (job: JobEntry, attempt = 1) => ({
  jobId: job.id,
  taskIndex: 0,
  attempt,
  state: "running" as const,
});

describe("recorded stop intent", () => {
  it("a hold re-sent to an agent that reconnects keeps outcome preempted, reason held", async () => {
    await harness.core.agents.attachHost(hello("h1"));
    const job = await running();
    await harness.core.jobs.hold(job.id);
    expect(harness.stops()).toEqual([
      expect.objectContaining({ host: "h1", outcome: "preempted", reason: "held" }),
    ]);
    expect(job.attempt(0, 1)?.stop).toEqual({ outcome: "preempted", reason: { kind: "held" } });
    harness.sent = [];
    await harness.core.agents.attachHost(hello("h1", [held(job)]));
    expect(harness.stops()).toEqual([
      expect.objectContaining({ host: "h1", outcome: "preempted", reason: "held" }),
    ]);
  });

  it("a stop re-sent after a server restart keeps the outcome and reason it was decided with", async () => {
    await harness.core.agents.attachHost(hello("h1"));
    const job = await running();
    // A stop as the scheduler would decide it (preemption), applied by the one applyPlan.
    const intent: StopIntent = {
      outcome: "preempted",
      reason: { kind: "preempted-for", job: "99", priority: 5, qos: null },
    };
    const sent = { outcome: "preempted", reason: "preempted for job 99 (priority 5)" };
    await harness.core.reactor.run((step) =>
      applyPlan(step, {
        place: [],
        preempt: [],
        stop: [{ jobId: job.id, taskIndex: 0, attempt: 1, intent }],
      }),
    );
    expect(harness.stops().at(-1)).toMatchObject(sent);
    const core = await harness.restart();
    harness.sent = [];
    await core.agents.attachHost(hello("h1", [held(job)]));
    expect(harness.stops()).toEqual([expect.objectContaining({ host: "h1", ...sent })]);
    const snapshot = await harness.store.load();
    expect(snapshot.attempts[0]).toMatchObject({ state: "stopping", stop: intent });
  });

  it("a stop an earlier version recorded with its reason as text is re-sent with that text, and a cancel of the task still ends it", async () => {
    await harness.core.agents.attachHost(hello("h1"));
    // Retries left: only the cancel keeps a failed attempt's task from going round again.
    const job = await submitOn(
      harness.core,
      validateJobSpec({ command: "sleep 100", retry: { maxAttempts: 3 } }),
      "alice",
    );
    await settle();
    await harness.core.agents.attemptStarted("h1", job.id, 0, 1);
    const stopped = (reason: string) => ({
      ...job.attempt(0, 1)!,
      state: "stopping" as const,
      // The stop as an earlier version stored it: its reason a text.
      stop: { outcome: "cancelled", reason } as unknown as StopIntent,
    });
    // `steward cancel ID --tasks 0` under an earlier version: the job itself is not being cancelled.
    harness.core.reactor.stop();
    await harness.store.commit(await harness.store.beginTerm(), [
      { op: "putAttempt", attempt: stopped("cancelled by user") },
    ]);
    const core = await harness.start();
    harness.sent = [];
    await core.agents.attachHost(hello("h1", [held(job)]));
    expect(harness.stops()).toEqual([
      expect.objectContaining({ host: "h1", outcome: "cancelled", reason: "cancelled by user" }),
    ]);
    expect(core.read.job(job.id).attempt(0, 1)?.stop).toStrictEqual({
      outcome: "cancelled",
      reason: { kind: "user-cancel" },
    });
    // The job exits 1 as the stop reaches it: a failure, with retries left.
    await core.agents.attemptEnded("h1", ended(job.id, 1, "failed", { reason: "exit code 1" }));
    await settle();
    // A user's cancel of the task, as it was: the task does not go round again, and the job ends.
    const stored = await harness.store.loadJob(job.id);
    expect(stored?.tasks[0].state).toBe("cancelled");
    expect(stored?.job.state).toBe("cancelled");
    expect(stored?.attempts).toMatchObject([{ outcome: "failed", reason: "exit code 1" }]);
  });

  it("a stop an earlier version recorded with a text of no kind is re-sent with that text, after a restart too", async () => {
    await harness.core.agents.attachHost(hello("h1"));
    const job = await running();
    harness.core.reactor.stop();
    await harness.store.commit(await harness.store.beginTerm(), [
      {
        op: "putAttempt",
        attempt: {
          ...job.attempt(0, 1)!,
          state: "stopping",
          stop: { outcome: "preempted", reason: "making room for job 99" } as unknown as StopIntent,
        },
      },
    ]);
    let core = await harness.start();
    const sent = { host: "h1", outcome: "preempted", reason: "making room for job 99" };
    harness.sent = [];
    await core.agents.attachHost(hello("h1", [held(job)]));
    expect(harness.stops()).toEqual([expect.objectContaining(sent)]);
    // Kept as this version keeps it, it reads the same after another restart.
    core = await harness.restart();
    harness.sent = [];
    await core.agents.attachHost(hello("h1", [held(job)]));
    expect(harness.stops()).toEqual([expect.objectContaining(sent)]);
    await core.agents.attemptEnded("h1", ended(job.id, 1, "preempted", { reason: "making room for job 99" }));
    expect(core.read.job(job.id).attempt(0, 1)).toMatchObject({
      outcome: "preempted",
      reason: "making room for job 99",
    });
  });

  it("a plan's stop of an attempt that already ended is dropped", async () => {
    await harness.core.agents.attachHost(hello("h1"));
    const job = await running();
    await harness.core.agents.attemptEnded("h1", ended(job.id, 1));
    const applied = await harness.core.reactor.run((step) =>
      applyPlan(step, {
        place: [],
        preempt: [],
        stop: [
          {
            jobId: job.id,
            taskIndex: 0,
            attempt: 1,
            intent: { outcome: "preempted", reason: { kind: "text", text: "late" } },
          },
        ],
      }),
    );
    expect(applied.stopped).toEqual([]);
    expect(harness.stops()).toEqual([]);
  });
});

describe("recorded migration target", () => {
  it("migrate --to survives a server restart", async () => {
    for (const name of ["h1", "h2", "h3"]) await harness.core.agents.attachHost(hello(name));
    const job = await running("sleep 100", "h1");
    await harness.core.jobs.migrate(job.id, "h3");
    expect(job.tasks[0].migration).toEqual({ to: "h3", from: "h1" });
    const core = await harness.restart();
    await core.agents.attachHost(hello("h1", [held(job)]));
    await core.agents.attachHost(hello("h2"));
    await core.agents.attachHost(hello("h3"));
    expect((await core.read.explain(job.id)).reasons).toContain("task 0 is migrating to h3");
    harness.sent = [];
    await core.agents.attemptEnded("h1", ended(job.id, 1, "migrated", { reason: "migrating to h3" }));
    await settle();
    // h2 comes first by name with as many free slots: only the recorded target sends it to h3.
    expect(harness.starts()).toEqual([expect.objectContaining({ host: "h3", attempt: 2 })]);
    expect(core.read.job(job.id).tasks[0].migration).toBeNull();
  });

  it("migrate without a target keeps the task off the host it left, after a restart too", async () => {
    for (const name of ["h1", "h2"]) await harness.core.agents.attachHost(hello(name));
    const job = await running("sleep 100", "h1");
    await harness.core.jobs.migrate(job.id, null);
    const core = await harness.restart();
    await core.agents.attachHost(hello("h1", [held(job)]));
    await core.agents.attachHost(hello("h2"));
    harness.sent = [];
    await core.agents.attemptEnded("h1", ended(job.id, 1, "migrated"));
    await settle();
    expect(harness.starts()).toEqual([expect.objectContaining({ host: "h2", attempt: 2 })]);
  });
});

describe("failure classes at the edges", () => {
  it("an input staging error does not count toward the poison limit", async () => {
    await harness.core.agents.attachHost(hello("h1"));
    const job = await submitOn(
      harness.core,
      validateJobSpec({ command: "true", retry: { maxAttempts: 1, backoffSeconds: 0 } }),
      "alice",
      [],
    );
    for (let attempt = 1; attempt < SYSTEM_FAILURE_LIMIT; attempt++) {
      await settle();
      expect(job.latestAttempt(0)).toMatchObject({ number: attempt, state: "starting" });
      await harness.core.agents.attemptEnded(
        "h1",
        ended(job.id, attempt, "lost", { reason: "staging inputs failed: HTTP 500", cause: "staging" }),
      );
      expect(job.tasks[0]).toMatchObject({
        state: "pending",
        losses: 0,
        failures: 0,
        systemFailures: attempt,
      });
      // A system failure backs off before the next attempt.
      expect(job.tasks[0].notBefore).toBeGreaterThan(harness.now);
      harness.now = job.tasks[0].notBefore!;
      // The host stays alive through the back-offs (they outlast the host timeout).
      harness.core.touch("h1");
      harness.core.reactor.tick();
    }
    await settle();
    await harness.core.agents.attemptEnded(
      "h1",
      ended(job.id, SYSTEM_FAILURE_LIMIT, "lost", { reason: "staging inputs failed", cause: "staging" }),
    );
    expect(job.tasks[0]).toMatchObject({ state: "failed", losses: 0, systemFailures: SYSTEM_FAILURE_LIMIT });
    const events = await harness.store.events(job.id);
    expect(
      events.some((event) => event.message.includes(`system failure ${SYSTEM_FAILURE_LIMIT} times`)),
    ).toBe(true);
    expect(events.some((event) => event.message.includes("poison"))).toBe(false);
  });

  it("a start that cannot be delivered is a system failure, not a host loss", async () => {
    await harness.core.agents.attachHost(hello("h1"));
    harness.deliver = false;
    const job = await submitOn(harness.core, validateJobSpec({ command: "true" }), "alice", []);
    await settle();
    expect(job.attempt(0, 1)).toMatchObject({ state: "ended", outcome: "lost" });
    expect(job.attempt(0, 1)?.reason).toMatch(/could not be delivered/);
    expect(job.tasks[0]).toMatchObject({ losses: 0, systemFailures: 1, state: "pending" });
  });

  it("a host loss still counts toward the poison limit", async () => {
    await harness.core.agents.attachHost(hello("h1"));
    const job = await running();
    await harness.core.agents.attemptEnded("h1", ended(job.id, 1, "lost", { reason: "supervisor vanished" }));
    expect(job.tasks[0]).toMatchObject({ losses: 1, systemFailures: 0 });
  });
});

describe("terms", () => {
  it("a server whose term is older than the store's newest cannot commit", async () => {
    await harness.core.agents.attachHost(hello("h1"));
    // Another server takes the next term on the same store.
    await harness.store.beginTerm();
    await expect(
      submitOn(harness.core, validateJobSpec({ command: "true" }), "alice", []),
    ).rejects.toBeInstanceOf(StaleTermError);
    expect(harness.fatal[0]).toBeInstanceOf(StaleTermError);
  });

  it("job ids come from the store: a restarted server never hands out an id again", async () => {
    const first = await submitOn(harness.core, validateJobSpec({ command: "true" }), "alice", []);
    const core = await harness.restart();
    const second = await submitOn(core, validateJobSpec({ command: "true" }), "alice", []);
    expect(Number(second.id)).toBeGreaterThan(Number(first.id));
  });
});

describe("two servers on one SQLite file", () => {
  it("the one that started first is fenced once the second takes its term", async () => {
    const { mkdtemp, rm } = await import("node:fs/promises");
    const { tmpdir } = await import("node:os");
    const { join } = await import("node:path");
    const dir = await mkdtemp(join(tmpdir(), "steward-terms-"));
    const first = new Harness(new SqliteStore(join(dir, "s.db")));
    const second = new Harness(new SqliteStore(join(dir, "s.db")));
    try {
      await first.start();
      const job = await submitOn(first.core, validateJobSpec({ command: "true" }), "alice", []);
      await second.start();
      expect(second.core.read.job(job.id).record.state).toBe("pending");
      await expect(first.core.jobs.cancel(job.id)).rejects.toBeInstanceOf(StaleTermError);
      expect((await second.store.load()).jobs[0].state).toBe("pending");
    } finally {
      await first.close();
      await second.close();
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("a submit repeated with its key", () => {
  it("answers the job the first one made, also after a restart; another owner's key is its own", async () => {
    const spec = validateJobSpec({ command: "true" });
    const first = await submitOn(harness.core, spec, "alice", [], undefined, "key-1");
    const again = await submitOn(harness.core, spec, "alice", [], undefined, "key-1");
    expect(again.id).toBe(first.id);
    const bobs = await submitOn(harness.core, spec, "bob", [], undefined, "key-1");
    expect(bobs.id).not.toBe(first.id);
    const core = await harness.restart();
    expect((await submitOn(core, spec, "alice", [], undefined, "key-1")).id).toBe(first.id);
    expect((await harness.store.load()).jobs.map((job) => job.submitKey)).toStrictEqual(["key-1", "key-1"]);
  });

  it("two submits with one key at the same moment make one job", async () => {
    const spec = validateJobSpec({ command: "true" });
    const [a, b] = await Promise.all([
      submitOn(harness.core, spec, "alice", [], undefined, "same"),
      submitOn(harness.core, spec, "alice", [], undefined, "same"),
    ]);
    expect(a.id).toBe(b.id);
    expect((await harness.store.load()).jobs).toHaveLength(1);
  });
});

describe("checkpoints through the reactor", () => {
  const sha = (letter: string) => letter.repeat(64);
  const manifest = (letter: string) => ({ files: [{ path: "state", sha256: sha(letter), bytes: 4 }] });

  it("blobs no part names are deleted once the commit is durable, before it is answered; parts survive a restart", async () => {
    await harness.core.agents.attachHost(hello("h1"));
    const job = await running();
    const at = { jobId: job.id, taskIndex: 0 };
    const drops: { objects: string[]; recorded: number[] }[] = [];
    harness.core.reactor.setCheckpointBlobs({
      drop: async (drop) => {
        const recorded = (await harness.store.load()).checkpointParts.map((part) => part.generation);
        drops.push({ objects: drop.objects, recorded });
      },
    });
    await harness.core.checkpoints.objectStored({ ...at, ranks: [0], sha256: sha("a"), bytes: 4 });
    expect(await harness.core.checkpoints.commit({ ...at, attempt: 1, manifest: manifest("a") })).toEqual({
      generation: 1,
      bytes: 4,
      previous: null,
    });
    expect(drops).toEqual([]);
    await harness.core.checkpoints.objectStored({ ...at, ranks: [0], sha256: sha("b"), bytes: 4 });
    await harness.core.checkpoints.commit({ ...at, attempt: 1, manifest: manifest("b") });
    // Answered after the drop, which ran with generation 1's part already gone from the store.
    expect(drops).toEqual([{ objects: [sha("a")], recorded: [2] }]);
    // The drop is done: the object may be uploaded again.
    await harness.core.checkpoints.objectStored({ ...at, ranks: [0], sha256: sha("a"), bytes: 4 });

    const core = await harness.restart();
    expect(core.read.restartManifest(job.id, 0)).toEqual(manifest("b"));
    expect(core.read.findJob(job.id)?.tasks[0].checkpoint).toMatchObject({ generation: 2, bytes: 4 });
  });
});

describe("reads", () => {
  /** A real SQLite store whose commits wait while `held` is set. */
  class HeldStore extends SqliteStore {
    held: Promise<void> | null = null;
    override async commit(...args: Parameters<SqliteStore["commit"]>): Promise<void> {
      if (this.held) await this.held;
      return super.commit(...args);
    }
  }

  it("a job is read once the changes handled before the read are committed, with their events", async () => {
    await harness.close();
    const store = new HeldStore(":memory:");
    harness = new Harness(store);
    await harness.start();
    const { core } = harness;
    const job = await submitOn(
      core,
      validateJobSpec({ command: "true", requirements: 'host.name == "nowhere"' }),
      "alice",
    );
    await settle();
    let release = () => {};
    store.held = new Promise((resolve) => {
      release = resolve;
    });
    // Handled at once (the state in memory changes), committed once the store lets it.
    const cancelled = core.jobs.cancel(job.id, "alice");
    let read: JobEntry | null = null;
    const reading = core.read.readJob(job.id).then((entry) => {
      read = entry;
    });
    await settle();
    expect(read).toBeNull();
    store.held = null;
    release();
    await Promise.all([cancelled, reading]);
    expect((read as JobEntry | null)?.record.state).toBe("cancelled");
    const kinds = (await store.events(job.id)).map((event) => event.kind);
    expect(kinds).toContain("cancel");
  });

  it("a host is listed attached once its attach is committed", async () => {
    await harness.close();
    const store = new HeldStore(":memory:");
    harness = new Harness(store);
    await harness.start();
    const { core } = harness;
    let release = () => {};
    store.held = new Promise((resolve) => {
      release = resolve;
    });
    const attached = core.agents.attachHost(hello("h1"));
    await settle();
    // In memory the host is there and connected; the store does not hold it yet.
    expect(core.read.listHosts().map((host) => [host.name, host.connected])).toStrictEqual([["h1", true]]);
    let listed: string[] | null = null;
    const reading = core.read.readHosts().then((hosts) => {
      listed = hosts.map((host) => `${host.name} ${host.connected}`);
    });
    await settle();
    expect(listed).toBeNull();
    store.held = null;
    release();
    await Promise.all([attached, reading]);
    expect(listed).toStrictEqual(["h1 true"]);
    expect((await store.load()).hosts.map((host) => host.name)).toStrictEqual(["h1"]);
  });
});

describe("leases after a long stretch of work", () => {
  it("an agent whose messages wait unread in its socket is not taken for lost once the loop reads them", async () => {
    await harness.close();
    harness = new Harness();
    // The real clock and the reactor's own timer: the order of the event loop's phases is the test.
    Object.defineProperty(harness, "now", { get: () => Date.now() });
    const core = await harness.start();
    await core.agents.attachHost(hello("h1"));
    core.reactor.start();
    // The agent's messages: a line every 50 ms from another process, each renewing the lease as
    // the gateway does for any message.
    const agent = spawn("/bin/sh", ["-c", "while :; do echo heartbeat; sleep 0.05; done"], {
      stdio: ["ignore", "pipe", "ignore"],
    });
    agent.stdout.on("data", () => core.touch("h1"));
    try {
      await new Promise((resolve) => setTimeout(resolve, 300));
      // A pass over a huge backlog, or a long collection: the loop does nothing else for longer
      // than the host timeout (3 s) while the agent's lines pile up in the pipe.
      await new Promise<void>((resolve) =>
        setImmediate(() => {
          const until = Date.now() + 3500;
          while (Date.now() < until) {}
          resolve();
        }),
      );
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(core.read.listHosts().find((host) => host.name === "h1")?.state).toBe("ready");
    } finally {
      agent.kill("SIGKILL");
    }
  }, 15_000);
});

describe("a slot freed by an end", () => {
  /** A real SQLite store that keeps the changes of each commit. */
  class CountingStore extends SqliteStore {
    commits: Change[][] = [];
    override async commit(term: number, changes: readonly Change[]): Promise<void> {
      this.commits.push([...changes]);
      await super.commit(term, changes);
    }
  }

  it("is given to the next task in the same commit as the end: its start does not wait for another", async () => {
    const store = new CountingStore(":memory:");
    const own = new Harness(store);
    const core = await own.start();
    try {
      await core.agents.attachHost(hello("h1", [], 1));
      const job = await submitOn(
        core,
        validateJobSpec({ command: "sleep 100", array: { count: 2 }, requirements: 'host.name == "h1"' }),
        "alice",
      );
      await settle();
      await core.agents.attachHost(hello("h2", [], 1));
      const other = await submitOn(core, validateJobSpec({ command: "sleep 100" }), "bob");
      await settle();
      expect(own.starts().map((start) => [start.host, start.jobId, start.taskIndex])).toEqual([
        ["h1", job.id, 0],
        ["h2", other.id, 0],
      ]);
      await core.agents.attemptStarted("h1", job.id, 0, 1);
      store.commits = [];
      own.sent = [];
      // As the in-process link delivers reports: in a turn's setImmediate, another report whose
      // commit is asked for first (its batch is taken in the next turn, before the pass the end asks for).
      await new Promise<void>((done) =>
        setImmediate(() => {
          void core.agents.attemptStarted("h2", other.id, 0, 1);
          void core.agents.attemptEnded("h1", ended(job.id, 1)).then(done);
        }),
      );
      await settle();
      expect(own.starts().map((start) => start.taskIndex)).toEqual([1]);
      const withTheEnd = store.commits.filter((changes) =>
        changes.some(
          (change) =>
            change.op === "putAttempt" && change.attempt.jobId === job.id && change.attempt.taskIndex === 0,
        ),
      );
      expect(withTheEnd).toHaveLength(1);
      expect(
        withTheEnd[0].some(
          (change) =>
            change.op === "putAttempt" && change.attempt.jobId === job.id && change.attempt.taskIndex === 1,
        ),
      ).toBe(true);
    } finally {
      await own.close();
    }
  });
});

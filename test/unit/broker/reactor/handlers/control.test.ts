// What users ask of jobs and hosts (handlers/control.ts), as pure handlers
// (test/helpers/handler-bench.ts): cancel (of a job, of some tasks), hold, release, migrate, drain,
// remove; each refusal's status and words, and what each leaves alone.

import { describe, expect, it } from "vitest";
import {
  ConflictError,
  InvalidRequestError,
  NotFoundError,
} from "../../../../../src/broker/reactor/errors.ts";
import {
  attachHost,
  attemptEnded,
  attemptStarted,
} from "../../../../../src/broker/reactor/handlers/agent-reports.ts";
import {
  cancelJob,
  cancelTasks,
  checkTaskIndexes,
  drainHost,
  findJob,
  forgetHost,
  holdJob,
  migrateJob,
  releaseJob,
  removeHost,
  removeJob,
  undrainHost,
} from "../../../../../src/broker/reactor/handlers/control.ts";
import { expireLeases } from "../../../../../src/broker/reactor/handlers/leases.ts";
import { submitJob } from "../../../../../src/broker/reactor/handlers/submit.ts";
import { issueHostCredential } from "../../../../../src/broker/reactor/handlers/tokens.ts";
import { agentDetached } from "../../../../../src/broker/state/soft-state.ts";
import { validateJobSpec } from "../../../../../src/common/model/job-spec.ts";
import { newTokenOf } from "../../../../../src/common/model/tokens.ts";
import { ended, facts, hello } from "../../../../helpers/agent-messages.ts";
import { HandlerBench } from "../../../../helpers/handler-bench.ts";

/** A bench with `hosts` attached (two slots each) and job "1" of `spec` submitted, placed and its attempts started. */
function started(spec: Record<string, unknown>, hosts: string[] = ["h1"]) {
  const bench = new HandlerBench();
  for (const name of hosts) bench.run((step) => attachHost(step, hello(name)));
  const job = bench.run((step) =>
    submitJob(step, { id: "1", spec: validateJobSpec(spec), owner: "alice", inputs: [] }),
  ).result;
  bench.schedule();
  for (const start of bench.starts()) bench.run((step) => attemptStarted(step, start.host, start));
  bench.effects = [];
  return { bench, job };
}

/** Ends attempt 1 of task `taskIndex` on h1 as its agent reports it: as asked to stop, or succeeded. */
function endOnH1(bench: HandlerBench, jobId: string, taskIndex = 0): void {
  const attempt = bench.state.jobs.get(jobId)!.attempt(taskIndex, 1)!;
  const outcome = attempt.stop?.outcome ?? "succeeded";
  bench.run((step) => attemptEnded(step, "h1", ended(jobId, 1, outcome, { taskIndex })));
}

/** The kinds and data of a job's events of `kind`. */
const eventsOf = (bench: HandlerBench, jobId: string, kind: string) =>
  bench
    .events(jobId)
    .filter((event) => event.kind === kind)
    .map((event) => event.data);

/** What `run` throws: its class and message. */
function thrown(run: () => unknown): { type: string; message: string } {
  try {
    run();
  } catch (error) {
    return { type: (error as Error).constructor.name, message: (error as Error).message };
  }
  return { type: "none", message: "" };
}

describe("finding a job", () => {
  it("answers a job not known as not found, naming it", () => {
    const { bench } = started({ command: "work" });
    expect(thrown(() => bench.run((step) => findJob(step, "9")))).toEqual({
      type: NotFoundError.name,
      message: "no job 9",
    });
  });
});

describe("a cancel", () => {
  it("cancels the tasks not started, stops the running ones as a user's cancel, and names who asked", () => {
    const { bench, job } = started({ command: "work", array: { count: 3 } }, ["h1"]);
    // Two slots: tasks 0 and 1 run, task 2 waits.
    expect(job.tasks.map((task) => task.state)).toEqual(["running", "running", "pending"]);
    bench.run((step) => cancelJob(step, job.id, "bob"));
    expect(job.tasks[2].state).toBe("cancelled");
    expect(job.record.cancelRequested).toBe(true);
    expect(eventsOf(bench, job.id, "cancel")).toEqual([{ by: "bob" }]);
    expect(bench.stops().map(({ taskIndex, outcome, reason }) => ({ taskIndex, outcome, reason }))).toEqual([
      { taskIndex: 0, outcome: "cancelled", reason: "cancelled by user" },
      { taskIndex: 1, outcome: "cancelled", reason: "cancelled by user" },
    ]);
  });

  it("of some tasks: those not started end cancelled, running ones are stopped, ended ones are left", () => {
    const { bench, job } = started({ command: "work", array: { count: 4 } }, ["h1"]);
    endOnH1(bench, job.id, 0);
    // Task 0 succeeded, 1 runs, 2 and 3 wait.
    expect(job.tasks.map((task) => task.state)).toEqual(["succeeded", "running", "pending", "pending"]);
    bench.effects = [];
    bench.run((step) => cancelTasks(step, job.id, [0, 1, 2], "bob"));
    expect(job.tasks.map((task) => task.state)).toEqual(["succeeded", "running", "cancelled", "pending"]);
    expect(eventsOf(bench, job.id, "cancel")).toEqual([{ by: "bob", tasks: "1, 2" }]);
    expect(bench.stops().map(({ taskIndex, outcome }) => ({ taskIndex, outcome }))).toEqual([
      { taskIndex: 1, outcome: "cancelled" },
    ]);
    // A cancel of running tasks alone writes no task.
    const running = started({ command: "work", array: { count: 2 } });
    running.bench.run((step) => cancelTasks(step, running.job.id, [1]));
    const other = started({ command: "work" });
    other.bench.run((step) => cancelJob(step, other.job.id));
    for (const each of [running, other]) {
      const empty = each.bench.recorded.filter(
        (change) => change.op === "putTasks" && change.tasks.length === 0,
      );
      expect(empty).toEqual([]);
    }
    // Only ended tasks named: nothing changes.
    const changes = bench.recorded.length;
    bench.run((step) => cancelTasks(step, job.id, [0, 2]));
    expect(bench.recorded.length).toBe(changes);
  });

  it("of tasks past the job's is refused, naming them and the tasks the job has", () => {
    expect(thrown(() => checkTaskIndexes("5", 1, [0, 1]))).toEqual({
      type: InvalidRequestError.name,
      message: "tasks: job 5 has one task (0): no task 1",
    });
    expect(thrown(() => checkTaskIndexes("5", 3, [2, 3, 7, 4, 5]))).toEqual({
      type: InvalidRequestError.name,
      message: "tasks: job 5 has 3 tasks (0-2): no task 3-5, 7",
    });
    expect(thrown(() => checkTaskIndexes("5", 3, [0, 2]))).toEqual({ type: "none", message: "" });
    try {
      checkTaskIndexes("5", 1, [1]);
    } catch (error) {
      expect((error as InvalidRequestError).field).toBe("tasks");
    }
  });
});

describe("a hold and a release", () => {
  it("holds a job: running attempts stop preempted, the reason goes in its event; once only", () => {
    const { bench, job } = started({ command: "work" });
    bench.run((step) => holdJob(step, job.id, "bob", "maintenance"));
    expect(job.record.held).toBe(true);
    expect(eventsOf(bench, job.id, "hold")).toEqual([{ by: "bob", reason: "maintenance" }]);
    expect(bench.stops().map(({ outcome, reason }) => ({ outcome, reason }))).toEqual([
      { outcome: "preempted", reason: "held" },
    ]);
    const changes = bench.recorded.length;
    bench.run((step) => holdJob(step, job.id, "carol"));
    expect(bench.recorded.length).toBe(changes);
    // Without a reason, the event names who held it only.
    const other = started({ command: "work" });
    other.bench.run((step) => holdJob(step, other.job.id, "bob"));
    expect(eventsOf(other.bench, other.job.id, "hold")).toEqual([{ by: "bob" }]);
  });

  it("releases a held job, which asks for a pass; a job not held is answered as it is", () => {
    const { bench, job } = started({ command: "work" });
    const changes = bench.recorded.length;
    expect(bench.run((step) => releaseJob(step, job.id)).schedule).toBe(false);
    expect(bench.recorded.length).toBe(changes);
    bench.run((step) => holdJob(step, job.id));
    endOnH1(bench, job.id);
    expect(job.record.state).toBe("held");
    const released = bench.run((step) => releaseJob(step, job.id, "bob"));
    expect(released.schedule).toBe(true);
    expect(job.record).toMatchObject({ held: false, state: "pending" });
    expect(eventsOf(bench, job.id, "release")).toEqual([{ by: "bob" }]);
    bench.schedule();
    expect(bench.starts().map((start) => start.attempt)).toEqual([2]);
  });
});

describe("a migration", () => {
  it("is refused to a host not known, not ready or not connected, naming why", () => {
    const { bench, job } = started({ command: "work" }, ["h1", "h2"]);
    const migrate = (to: string) => thrown(() => bench.run((step) => migrateJob(step, job.id, to)));
    expect(migrate("h9")).toEqual({ type: NotFoundError.name, message: "no host h9" });
    bench.run((step) => drainHost(step, "h2"));
    expect(migrate("h2")).toEqual({ type: ConflictError.name, message: "host h2 is draining" });
    agentDetached(bench.state, "h2");
    expect(migrate("h2")).toEqual({ type: ConflictError.name, message: "host h2 is not connected" });
  });

  it("is refused when nothing runs, or when it runs on the host named already", () => {
    const { bench, job } = started({ command: "work" }, ["h1", "h2"]);
    expect(thrown(() => bench.run((step) => migrateJob(step, job.id, "h1")))).toEqual({
      type: ConflictError.name,
      message: "job 1 runs on h1 already: nothing to migrate",
    });
    bench.run((step) => holdJob(step, job.id));
    for (const to of ["h2", null])
      expect(thrown(() => bench.run((step) => migrateJob(step, job.id, to)))).toEqual({
        type: ConflictError.name,
        message: "job 1 has no running attempt to migrate",
      });
  });

  it("stops the attempts with the target recorded on their tasks, and names it in the event", () => {
    const { bench, job } = started({ command: "work" }, ["h1", "h2"]);
    bench.run((step) => migrateJob(step, job.id, "h2", "bob"));
    expect(job.tasks[0].migration).toEqual({ to: "h2", from: "h1" });
    expect(eventsOf(bench, job.id, "migrate")).toEqual([{ to: "h2", by: "bob" }]);
    expect(bench.stops().map(({ host, outcome, reason }) => ({ host, outcome, reason }))).toEqual([
      { host: "h1", outcome: "migrated", reason: "migrating to h2" },
    ]);
  });

  it("to no host named is refused when no other host could take the job now", () => {
    const { bench, job } = started({ command: "work" }, ["h1"]);
    expect(thrown(() => bench.run((step) => migrateJob(step, job.id, null)))).toEqual({
      type: ConflictError.name,
      message: expect.stringMatching(/^job 1: not migrated: .+; use hold and release to restart it on h1$/),
    });
    expect(job.attempt(0, 1)!.state).toBe("running");
  });

  it("to no host named is refused for an attempt not started yet too, with nowhere else to go", () => {
    const bench = new HandlerBench();
    bench.run((step) => attachHost(step, hello("h1")));
    const job = bench.run((step) =>
      submitJob(step, { id: "1", spec: validateJobSpec({ command: "work" }), owner: "alice", inputs: [] }),
    ).result;
    bench.schedule();
    expect(job.attempt(0, 1)!.state).toBe("starting");
    expect(thrown(() => bench.run((step) => migrateJob(step, job.id, null))).message).toMatch(
      /use hold and release to restart it on h1$/,
    );
  });

  it("to no host named asks only the hosts it moves away from, not one where an attempt is stopping", () => {
    // Task 0 runs on h2 (one slot); task 1 started on h1 (two slots) and is being stopped by a
    // cancel. Moving away from h2, h1 has room: the migration goes. Away from h1 there would be
    // nowhere (h2 is full), but nothing is moved away from h1.
    const bench = new HandlerBench();
    bench.run((step) => attachHost(step, hello("h2", [], 1)));
    const job = bench.run((step) =>
      submitJob(step, {
        id: "1",
        spec: validateJobSpec({ command: "work", array: { count: 2 } }),
        owner: "alice",
        inputs: [],
      }),
    ).result;
    bench.schedule();
    bench.run((step) => attachHost(step, hello("h1", [], 2)));
    bench.schedule();
    for (const start of bench.starts()) bench.run((step) => attemptStarted(step, start.host, start));
    expect([job.attempt(0, 1)!.host, job.attempt(1, 1)!.host]).toEqual(["h2", "h1"]);
    bench.run((step) => cancelTasks(step, job.id, [1]));
    expect(job.attempt(1, 1)!.state).toBe("stopping");
    bench.effects = [];
    bench.run((step) => migrateJob(step, job.id, null));
    expect(bench.stops().map(({ host, taskIndex, outcome }) => ({ host, taskIndex, outcome }))).toEqual([
      { host: "h2", taskIndex: 0, outcome: "migrated" },
    ]);
  });
});

describe("hosts", () => {
  it("drains a ready host only; an unknown one is not found", () => {
    const bench = new HandlerBench();
    bench.run((step) => attachHost(step, hello("h1")));
    expect(bench.run((step) => drainHost(step, "h1")).result.state).toBe("draining");
    expect(thrown(() => bench.run((step) => drainHost(step, "h9")))).toEqual({
      type: NotFoundError.name,
      message: "no host h9",
    });
  });

  it("removing a host revokes its credentials not revoked yet, and answers their ids", () => {
    const bench = new HandlerBench();
    bench.run((step) => attachHost(step, hello("h1")));
    bench.run((step) => issueHostCredential(step, "h1", "default", null, newTokenOf("host")));
    const second = bench.run((step) =>
      issueHostCredential(step, "h1", "default", null, newTokenOf("host")),
    ).result;
    agentDetached(bench.state, "h1");
    const handled = bench.run((step) => removeHost(step, "h1"));
    expect(handled.result).toEqual([second.id]);
    expect(handled.schedule).toBe(true);
  });

  it("forgets a host gone for good only when disconnected and running nothing, revoking its credential", () => {
    const { bench, job } = started({ command: "work" });
    bench.run((step) => issueHostCredential(step, "h1", "default", null, newTokenOf("host")));
    bench.run((step) => forgetHost(step, "h1"));
    expect(bench.state.hosts.has("h1")).toBe(true);
    agentDetached(bench.state, "h1");
    bench.run((step) => forgetHost(step, "h1"));
    expect(bench.state.hosts.has("h1")).toBe(true);
    endOnH1(bench, job.id);
    bench.run((step) => forgetHost(step, "h1"));
    expect(bench.state.hosts.has("h1")).toBe(false);
    expect(bench.state.tokens.credentialOf("h1", bench.now)).toBeUndefined();
    // A host not known: nothing.
    bench.run((step) => forgetHost(step, "h9"));
  });
});

describe("removing a job", () => {
  it("is refused for a job not ended, naming its state; an ended one goes", () => {
    const { bench, job } = started({ command: "work" });
    expect(thrown(() => bench.run((step) => removeJob(step, job.id)))).toEqual({
      type: ConflictError.name,
      message: "job 1 is running: cancel it first",
    });
    expect(thrown(() => bench.run((step) => removeJob(step, "9")))).toEqual({
      type: NotFoundError.name,
      message: "no job 9",
    });
    endOnH1(bench, job.id);
    bench.run((step) => removeJob(step, job.id));
    expect(bench.recorded.at(-1)).toEqual({ op: "deleteJob", jobId: job.id });
  });
});

describe("who asked, when no one is named", () => {
  it("is the user", () => {
    const { bench, job } = started({ command: "work", array: { count: 2 } }, ["h1", "h2"]);
    bench.run((step) => migrateJob(step, job.id, "h2"));
    bench.run((step) => holdJob(step, job.id));
    bench.run((step) => releaseJob(step, job.id));
    bench.run((step) => cancelTasks(step, job.id, [1]));
    bench.run((step) => cancelJob(step, job.id));
    const by = ["migrate", "hold", "release", "cancel"].flatMap((kind) =>
      eventsOf(bench, job.id, kind).map((data) => data.by),
    );
    expect(by).toEqual(["user", "user", "user", "user", "user"]);
    agentDetached(bench.state, "h2");
    bench.run((step) => removeHost(step, "h2"));
    expect(job.attempt(1, 1)?.reason ?? bench.events(job.id).at(-1)?.message).toBeDefined();
    expect(bench.events(job.id).some((event) => event.message.includes("host h2 removed by user"))).toBe(
      true,
    );
  });
});

describe("tasks waiting, or of a held job", () => {
  it("end cancelled by a cancel of the job or of them", () => {
    const bench = new HandlerBench();
    bench.run((step) => attachHost(step, hello("h1")));
    const submit = (id: string, spec: Record<string, unknown>) =>
      bench.run((step) => submitJob(step, { id, spec: validateJobSpec(spec), owner: "alice", inputs: [] }))
        .result;
    const first = submit("1", { command: "work" });
    const waiting = submit("2", { command: "work", dependsOn: ["1"] });
    const held = submit("3", { command: "work", array: { count: 2 } });
    bench.run((step) => holdJob(step, held.id));
    expect(first.tasks[0].state).toBe("pending");
    expect(waiting.tasks[0].state).toBe("waiting");
    expect(held.record.state).toBe("held");
    // A held job's tasks wait pending.
    expect(held.tasks.map((task) => task.state)).toEqual(["pending", "pending"]);
    const alsoWaiting = submit("4", { command: "work", dependsOn: ["1"] });
    bench.run((step) => cancelTasks(step, alsoWaiting.id, [0]));
    expect(alsoWaiting.tasks[0].state).toBe("cancelled");
    bench.run((step) => cancelJob(step, waiting.id));
    expect(waiting.tasks[0].state).toBe("cancelled");
    bench.run((step) => cancelTasks(step, held.id, [1]));
    expect(held.tasks.map((task) => task.state)).toEqual(["pending", "cancelled"]);
    bench.run((step) => cancelJob(step, held.id));
    expect(held.tasks.map((task) => task.state)).toEqual(["cancelled", "cancelled"]);
    expect(held.record.state).toBe("cancelled");
  });

  it("a cancel of the last open tasks ends the job", () => {
    const { bench, job } = started({ command: "work", array: { count: 3 } }, ["h1"]);
    endOnH1(bench, job.id, 0);
    endOnH1(bench, job.id, 1);
    expect(job.tasks.map((task) => task.state)).toEqual(["succeeded", "succeeded", "pending"]);
    bench.run((step) => cancelTasks(step, job.id, [2]));
    expect(job.record.state).toBe("cancelled");
  });

  it("a hold of a job that waits makes it held", () => {
    const bench = new HandlerBench();
    const job = bench.run((step) =>
      submitJob(step, { id: "1", spec: validateJobSpec({ command: "work" }), owner: "alice", inputs: [] }),
    ).result;
    bench.run((step) => holdJob(step, job.id));
    expect(job.record.state).toBe("held");
  });
});

describe("a migration to a host named", () => {
  it("is not refused for want of room there now: the task waits for it", () => {
    const bench = new HandlerBench();
    bench.run((step) => attachHost(step, hello("h1", [], 2)));
    bench.run((step) => attachHost(step, hello("h2", [], 1)));
    const job = bench.run((step) =>
      submitJob(step, {
        id: "1",
        spec: validateJobSpec({ command: "work", resources: { cpus: 2 } }),
        owner: "alice",
        inputs: [],
      }),
    ).result;
    bench.schedule();
    bench.run((step) => attemptStarted(step, "h1", { jobId: job.id, taskIndex: 0, attempt: 1 }));
    bench.run((step) => migrateJob(step, job.id, "h2"));
    expect(job.tasks[0].migration).toEqual({ to: "h2", from: "h1" });
  });
});

describe("draining and undraining", () => {
  it("leaves a lost host lost; undraining a ready host changes nothing and asks for no pass", () => {
    const bench = new HandlerBench();
    bench.run((step) => attachHost(step, hello("h1")));
    bench.run((step) => attachHost(step, hello("h2")));
    const changes = bench.recorded.length;
    const undrained = bench.run((step) => undrainHost(step, "h2"));
    expect(undrained.schedule).toBe(false);
    expect(bench.recorded.length).toBe(changes);
    bench.run((step) => drainHost(step, "h2"));
    expect(bench.run((step) => undrainHost(step, "h2")).schedule).toBe(true);
    bench.now += 10_000;
    bench.run((step) => expireLeases(step, 3));
    expect(bench.run((step) => drainHost(step, "h1")).result.state).toBe("lost");
    expect(thrown(() => bench.run((step) => undrainHost(step, "h9")))).toEqual({
      type: NotFoundError.name,
      message: "no host h9",
    });
    expect(thrown(() => bench.run((step) => removeHost(step, "h9")))).toEqual({
      type: NotFoundError.name,
      message: "no host h9",
    });
  });

  it("removing a host ends its attempts lost, the host's failure", () => {
    const { bench, job } = started({ command: "work" });
    agentDetached(bench.state, "h1");
    bench.run((step) => removeHost(step, "h1", "bob"));
    expect(eventsOf(bench, job.id, "attempt.lost")).toEqual([expect.objectContaining({ cause: "host" })]);
  });

  it("forgetting a host without a credential removes it", () => {
    const bench = new HandlerBench();
    bench.run((step) => attachHost(step, hello("h1")));
    agentDetached(bench.state, "h1");
    bench.run((step) => forgetHost(step, "h1"));
    expect(bench.state.hosts.has("h1")).toBe(false);
  });
});

describe("a job that has ended but is still in memory (a losing replica stopping)", () => {
  /** Job "1" of two replicas: attempt 2 on fast h2 succeeded, attempt 1 on slow h1 still stopping. */
  function endedInMemory() {
    const bench = new HandlerBench();
    const host = (name: string, speed: number) => ({
      ...hello(name, [], 1),
      facts: facts(name, { speed, slotsFree: 1 }),
    });
    bench.run((step) => attachHost(step, host("h1", 0.1)));
    const job = bench.run((step) =>
      submitJob(step, {
        id: "1",
        spec: validateJobSpec({ command: "work", replicas: 2 }),
        owner: "alice",
        inputs: [],
      }),
    ).result;
    bench.schedule();
    bench.run((step) => attemptStarted(step, "h1", { jobId: job.id, taskIndex: 0, attempt: 1 }));
    bench.run((step) => attachHost(step, host("h2", 4)));
    bench.schedule();
    bench.run((step) => attemptStarted(step, "h2", { jobId: job.id, taskIndex: 0, attempt: 2 }));
    bench.run((step) => attemptEnded(step, "h2", ended(job.id, 2)));
    expect(job.record.state).toBe("succeeded");
    expect(bench.state.jobs.get(job.id)).toBe(job);
    return { bench, job };
  }

  it("is left as it is by a cancel, refused a hold naming its state, and may be removed", () => {
    const { bench, job } = endedInMemory();
    const changes = bench.recorded.length;
    expect(bench.run((step) => cancelJob(step, job.id)).result).toBe(job);
    expect(bench.recorded.length).toBe(changes);
    expect(job.record.cancelRequested).toBe(false);
    expect(thrown(() => bench.run((step) => holdJob(step, job.id)))).toEqual({
      type: ConflictError.name,
      message: "job 1 is succeeded",
    });
    bench.run((step) => removeJob(step, job.id));
    expect(bench.recorded.at(-1)).toEqual({ op: "deleteJob", jobId: job.id });
  });
});

// Typed events: each kind renders the message the job's history showed before events were typed
// (the strings below are those the emitting code built), its data validates against its schema,
// and events an earlier version stored still read with their stored message.

import { cpSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { eventView } from "../../../../src/broker/api/views.ts";
import { SqliteStore } from "../../../../src/broker/store/sqlite.ts";
import { eventSchema, streamEventSchema } from "../../../../src/common/api/events.ts";
import {
  EVENT_DATA,
  EVENT_KINDS,
  type EventKind,
  type JobEvent,
  renderEvent,
  renderTaskNext,
  type TaskNext,
} from "../../../../src/common/model/events.ts";
import type { AttemptOutcome } from "../../../../src/common/model/states.ts";
import { cleanup, ROOT, tempDir } from "../../../helpers/steward.ts";

const contract = {
  task: 2,
  attempt: 1,
  host: "za",
  ratePerMinute: 0.5,
  minProgressPerMinute: 3,
  graceSeconds: 3,
  belowSince: 1_700_000_000_000,
  belowSeconds: 4,
  windowSeconds: 30,
  fromFraction: 0.1,
  toFraction: 0.125,
  measuredSeconds: 1.5,
};

const ended = { task: 0, attempt: 1, host: "h1", exitCode: null, reason: null, array: false };

/** Each case: the event, and the message the code before typed events wrote for it. */
const CASES: [JobEvent, string][] = [
  [{ kind: "submitted", data: { owner: "alice", tasks: 1 } }, "job submitted by alice"],
  [{ kind: "submitted", data: { owner: "alice", tasks: 20 } }, "array of 20 tasks submitted by alice"],
  [{ kind: "state", data: { from: "pending", to: "running" } }, "pending -> running"],
  [{ kind: "dependencies", data: { dependency: "7", state: "succeeded" } }, "dependencies succeeded"],
  [{ kind: "dependencies", data: { dependency: "7", state: "failed" } }, "dependency 7 ended failed"],
  [{ kind: "cancel", data: { by: "alice" } }, "cancel requested by alice"],
  [{ kind: "cancel", data: { by: "alice", tasks: "3, 7-9" } }, "cancel of tasks 3, 7-9 requested by alice"],
  [{ kind: "cancel", data: { by: "alice", tasks: "4" } }, "cancel of task 4 requested by alice"],
  [{ kind: "cancel", data: { by: "alice", tasks: "12" } }, "cancel of task 12 requested by alice"],
  [
    { kind: "retried", data: { by: "alice", tasks: "3, 7-9", count: 4, array: true } },
    "retried by alice: tasks 3, 7-9",
  ],
  [{ kind: "retried", data: { by: "bob", tasks: "0", count: 1, array: false } }, "retried by bob"],
  [
    { kind: "dependency.unmet", data: { dependency: "12", when: "failed", state: "succeeded", tasks: null } },
    "cancelled: dependency 12 ended succeeded (this job waited for it to fail)",
  ],
  [
    { kind: "dependency.unmet", data: { dependency: "12", when: "succeeded", state: null, tasks: null } },
    "cancelled: dependency 12 was removed (this job waited for it to succeed)",
  ],
  [
    {
      kind: "dependency.unmet",
      data: { dependency: "12", when: "succeeded", state: "failed", tasks: "2, 5" },
    },
    "tasks 2, 5 cancelled: the same tasks of dependency 12 ended failed (they waited for them to succeed)",
  ],
  [
    { kind: "dependency.unmet", data: { dependency: "12", when: "failed", state: "succeeded", tasks: "3" } },
    "task 3 cancelled: the same task of dependency 12 ended succeeded (it waited for it to fail)",
  ],
  [{ kind: "hold", data: { by: "alice" } }, "held by alice"],
  [{ kind: "hold", data: { by: "alice", reason: "disk full" } }, "held by alice: disk full"],
  [{ kind: "release", data: { by: "alice" } }, "released by alice"],
  [{ kind: "migrate", data: { to: "h2", by: "alice" } }, "migration to h2 requested by alice"],
  [{ kind: "migrate", data: { to: null, by: "alice" } }, "migration to another host requested by alice"],
  [
    {
      kind: "updated",
      data: {
        by: "alice",
        changes: [
          { field: "priority", from: 0, to: 5 },
          { field: "requirements", from: null, to: 'host.name == "b"' },
          { field: "timeLimitSeconds", from: 60, to: null },
        ],
      },
    },
    'updated by alice: priority 0 -> 5; requirements none -> host.name == "b"; timeLimitSeconds 60 -> none',
  ],
  [{ kind: "attempt.placed", data: { task: 0, attempt: 1, host: "h1" } }, "attempt 1 placed on h1"],
  [
    {
      kind: "restart",
      data: { task: 0, attempt: 2, host: "h1", checkpoint: null, checkpointBytes: null, array: false },
    },
    "attempt 2 on h1 restarts from the beginning: no checkpoint",
  ],
  [
    {
      kind: "restart",
      data: {
        task: 3,
        attempt: 2,
        host: "h2",
        checkpoint: 4,
        checkpointBytes: 1024,
        migration: { to: null, from: "h1" },
        array: true,
      },
    },
    "task 3 attempt 2 on h2 restarts from checkpoint generation 4 (1024 bytes)",
  ],
  [
    { kind: "replica.placed", data: { task: 1, attempt: 3, host: "h2", replica: 2, replicas: 3 } },
    "replica 2 of task 1 placed on h2 (attempt 3)",
  ],
  [
    {
      kind: "attempt.succeeded",
      data: { ...ended, outcome: "succeeded", exitCode: 0, next: { is: "succeeded" } },
    },
    "attempt 1 on h1 succeeded (exit 0): succeeded",
  ],
  [
    {
      kind: "attempt.failed",
      data: {
        ...ended,
        outcome: "failed",
        exitCode: 3,
        reason: "exit code 3",
        next: { is: "retry", failures: 1, maxAttempts: 3, delayMs: 900 },
      },
    },
    "attempt 1 on h1 failed (exit 3): failed; retry 2 of 3 in 0.9 s",
  ],
  [
    {
      kind: "attempt.failed",
      data: {
        ...ended,
        array: true,
        task: 4,
        outcome: "failed",
        exitCode: 1,
        reason: "exit code 1",
        next: { is: "failed", failures: 3, maxAttempts: 3 },
      },
    },
    "task 4 attempt 1 on h1 failed (exit 1): failed (3 of 3 attempts used): exit code 1",
  ],
  [
    {
      kind: "attempt.timed_out",
      data: {
        ...ended,
        outcome: "timed_out",
        exitCode: 143,
        next: { is: "failed", failures: 2, maxAttempts: 2 },
      },
    },
    "attempt 1 on h1 timed_out (exit 143): timed out (2 of 2 attempts used)",
  ],
  [
    {
      kind: "attempt.timed_out",
      data: {
        ...ended,
        outcome: "timed_out",
        next: { is: "retry", failures: 1, maxAttempts: 2, delayMs: 1000 },
      },
    },
    "attempt 1 on h1 timed_out: timed out; retry 2 of 2 in 1.0 s",
  ],
  [
    {
      kind: "attempt.lost",
      data: { ...ended, outcome: "lost", reason: "host h1 lost", cause: "host", next: { is: "restart" } },
    },
    "attempt 1 on h1 lost: lost (host h1 lost); restarting",
  ],
  [
    { kind: "attempt.lost", data: { ...ended, outcome: "lost", next: { is: "restart" } } },
    "attempt 1 on h1 lost: lost; restarting",
  ],
  [
    { kind: "attempt.lost", data: { ...ended, outcome: "lost", next: { is: "poison", losses: 5 } } },
    "attempt 1 on h1 lost: poison task: lost 5 times",
  ],
  [
    {
      kind: "attempt.lost",
      data: {
        ...ended,
        outcome: "lost",
        reason: "inputs could not be staged",
        cause: "staging",
        next: { is: "systemRetry", delayMs: 1200 },
      },
    },
    "attempt 1 on h1 lost: system failure: inputs could not be staged; restarting in 1.2 s",
  ],
  [
    {
      kind: "attempt.lost",
      data: {
        ...ended,
        outcome: "lost",
        reason: "start never delivered",
        cause: "undelivered",
        next: { is: "systemFailed", systemFailures: 5 },
      },
    },
    "attempt 1 on h1 lost: system failure 5 times: start never delivered",
  ],
  [
    {
      kind: "attempt.preempted",
      data: { ...ended, outcome: "preempted", exitCode: 143, reason: "held", next: { is: "restart" } },
    },
    "attempt 1 on h1 preempted (exit 143): preempted; restarting",
  ],
  [
    {
      kind: "attempt.migrated",
      data: { ...ended, outcome: "migrated", reason: "migrating to h2", next: { is: "restart" } },
    },
    "attempt 1 on h1 migrated: migrated; restarting",
  ],
  [
    {
      kind: "attempt.cancelled",
      data: {
        ...ended,
        outcome: "cancelled",
        exitCode: 143,
        reason: "cancelled by user",
        next: { is: "cancelled" },
      },
    },
    "attempt 1 on h1 cancelled (exit 143): cancelled",
  ],
  [
    {
      kind: "attempt.cancelled",
      data: {
        ...ended,
        array: true,
        outcome: "cancelled",
        exitCode: 0,
        reason: "replica lost the race",
        next: { is: "lostRace" },
      },
    },
    "task 0 attempt 1 on h1 cancelled (exit 0): replica lost the race",
  ],
  [
    {
      kind: "attempt.failed",
      data: {
        ...ended,
        array: true,
        outcome: "failed",
        exitCode: 1,
        reason: "exit code 1",
        next: { is: "replicasRunning", others: 2, failures: 2, maxAttempts: 3 },
      },
    },
    "task 0 attempt 1 on h1 failed (exit 1): failed (2 of 3 attempts used); 2 other replicas still running",
  ],
  [
    {
      kind: "attempt.lost",
      data: {
        ...ended,
        outcome: "lost",
        reason: "host h1 lost",
        next: { is: "replicasRunning", others: 1, failures: 0, maxAttempts: 3 },
      },
    },
    "attempt 1 on h1 lost: lost (host h1 lost); 1 other replica still running",
  ],
  [
    {
      kind: "attempt.migrated",
      data: {
        ...ended,
        outcome: "migrated",
        reason: "better host",
        next: { is: "replicasRunning", others: 1, failures: 0, maxAttempts: 3 },
      },
    },
    "attempt 1 on h1 migrated: migrated (better host); 1 other replica still running",
  ],
  [
    { kind: "gang.failed", data: { attempt: 1, rank: 2, host: "n3", outcome: "failed", exitCode: 7 } },
    "attempt 1: rank 2 on n3 failed (exit 7): stopping the gang",
  ],
  [
    { kind: "gang.failed", data: { attempt: 2, rank: 1, host: "n2", outcome: "lost", exitCode: null } },
    "attempt 2: rank 1 on n2 lost: stopping the gang",
  ],
  [
    {
      kind: "requirements.refused",
      data: {
        task: 0,
        attempt: 1,
        host: "za",
        requirements: "host.labels.zone ==",
        error: "Syntax error: mismatched input",
      },
    },
    "requirements file: Syntax error: mismatched input",
  ],
  [
    {
      kind: "requirements.changed",
      data: {
        task: 0,
        attempt: 1,
        host: "za",
        requirements: 'host.labels.zone == "b"',
        previous: 'host.labels.zone == "a"',
        array: false,
      },
    },
    'attempt 1 wrote new requirements: host.labels.zone == "b" (they replace host.labels.zone == "a")',
  ],
  [
    {
      kind: "requirements.changed",
      data: { task: 1, attempt: 2, host: "za", requirements: "true", previous: null, array: true },
    },
    "task 1 attempt 2 wrote new requirements: true (they replace none)",
  ],
  [
    {
      kind: "requirements.migrate",
      data: {
        task: 0,
        attempt: 1,
        host: "za",
        requirements: 'host.labels.zone == "b"',
        why: "requirements are false on this host",
        array: false,
      },
    },
    "attempt 1: za no longer satisfies the requirements (requirements are false on this host): migrating",
  ],
  [
    { kind: "contract.stays", data: { ...contract, array: false } },
    "attempt 1 broke its contract: progress 0.500/min below 3.000/min for 4 s on za, but no other host can run the job: it stays",
  ],
  [
    { kind: "contract.broken", data: { ...contract, array: true } },
    "task 2 attempt 1 broke its contract: progress 0.500/min below 3.000/min for 4 s on za" +
      " (measured over 2 s, 0.100 -> 0.125): migrating; za now ranks last for this job",
  ],
  [
    {
      kind: "walltime.migrate",
      data: { task: 1, attempt: 1, host: "pilot-1", secondsLeft: 42, marginSeconds: 60, array: true },
    },
    "task 1 attempt 1 leaves pilot-1: its walltime ends in 42 s; migrating with its checkpoint",
  ],
  [
    {
      kind: "walltime.migrate",
      data: { task: 0, attempt: 2, host: "pilot-1", secondsLeft: 42, marginSeconds: 60, array: false },
    },
    "attempt 2 leaves pilot-1: its walltime ends in 42 s; migrating with its checkpoint",
  ],
  [
    {
      kind: "preempt",
      data: { task: 0, attempt: 1, host: "h2", for: "high", forPriority: 10, remainingSeconds: 700.4 },
    },
    "task 0 attempt 1 on h2 preempted for job high (priority 10): 700 s of its work left, the most of the preemptible tasks",
  ],
  [
    {
      kind: "preempt",
      data: {
        task: 0,
        attempt: 1,
        host: "h2",
        for: "9",
        forPriority: 0,
        forQos: "high",
        remainingSeconds: 700.4,
      },
    },
    "task 0 attempt 1 on h2 preempted for job 9 (QoS high, priority 0): 700 s of its work left, the most of the preemptible tasks",
  ],
  [
    {
      kind: "reschedule",
      data: {
        task: 0,
        attempt: 1,
        from: "slow",
        to: "fast",
        gain: 0.9,
        remainingHere: 900,
        remainingThere: 90.2,
        costSeconds: 0,
      },
    },
    "task 0 attempt 1 migrated to fast: estimated gain 0.90 (remaining 900 s here, 90 s + 0 s move there)",
  ],
];

describe("event messages", () => {
  it.each(CASES)("%j renders as before", (event, message) => {
    expect(renderEvent(event)).toBe(message);
  });

  it.each(CASES)("%j has data its kind's schema accepts", (event) => {
    expect(EVENT_DATA[event.kind].safeParse(event.data).success).toBe(true);
  });

  it("every kind is in the table", () => {
    const covered = new Set<EventKind>(CASES.map(([event]) => event.kind));
    expect(EVENT_KINDS.filter((kind) => !covered.has(kind))).toEqual([]);
  });

  it("a kind's schema refuses data that does not fit it", () => {
    expect(EVENT_DATA.state.safeParse({ from: "pending" }).success).toBe(false);
    const lost = { ...ended, outcome: "lost", next: { is: "restart" } };
    expect(EVENT_DATA["attempt.lost"].safeParse(lost).success).toBe(true);
    expect(EVENT_DATA["attempt.failed"].safeParse(lost).success).toBe(false);
    expect(EVENT_DATA["attempt.lost"].safeParse({ ...lost, next: { is: "retry" } }).success).toBe(false);
    expect(EVENT_DATA["attempt.lost"].safeParse({ ...lost, array: undefined }).success).toBe(false);
  });
});

describe("what an attempt's end did to its task, in words", () => {
  it.each<[TaskNext, AttemptOutcome, string | null, string]>([
    [
      { is: "retry", failures: 1, maxAttempts: 3, delayMs: 2500, memoryMb: 512 },
      "failed",
      null,
      "failed; retry 2 of 3 in 2.5 s with 512 MB",
    ],
    [
      { is: "retry", failures: 1, maxAttempts: 3, delayMs: 2500 },
      "timed_out",
      null,
      "timed out; retry 2 of 3 in 2.5 s",
    ],
    [{ is: "systemFailed", systemFailures: 5 }, "lost", null, "system failure 5 times"],
    [{ is: "systemFailed", systemFailures: 5 }, "lost", "staging", "system failure 5 times: staging"],
    [{ is: "systemRetry", delayMs: 1000 }, "lost", null, "system failure; restarting in 1.0 s"],
    [{ is: "systemRetry", delayMs: 1000 }, "lost", "staging", "system failure: staging; restarting in 1.0 s"],
    [
      { is: "replicasRunning", others: 1, failures: 1, maxAttempts: 2 },
      "timed_out",
      null,
      "timed out (1 of 2 attempts used); 1 other replica still running",
    ],
    [
      { is: "replicasRunning", others: 2, failures: 1, maxAttempts: 2 },
      "failed",
      "exit code 1",
      "failed (1 of 2 attempts used); 2 other replicas still running",
    ],
    [
      { is: "replicasRunning", others: 2, failures: 0, maxAttempts: 2 },
      "lost",
      null,
      "lost; 2 other replicas still running",
    ],
    [
      { is: "replicasRunning", others: 1, failures: 0, maxAttempts: 2 },
      "lost",
      "host silent",
      "lost (host silent); 1 other replica still running",
    ],
  ])("%j after %s (%s)", (next, outcome, reason, words) => {
    expect(renderTaskNext(next, { outcome, reason })).toBe(words);
  });
});

describe("the OpenAPI document", () => {
  interface Schema {
    properties?: Record<string, Schema>;
    const?: string;
    allOf?: Schema[];
    anyOf?: Schema[];
    discriminator?: { propertyName: string; mapping: Record<string, string> };
  }
  const document = JSON.parse(readFileSync(join(ROOT, "docs/openapi.json"), "utf8")) as {
    components: { schemas: Record<string, Schema> };
  };
  const schemas = document.components.schemas;

  it.each(EVENT_KINDS)("lists the kind %s with the fields of its data", (kind) => {
    const component = schemas[`Event.${kind}`];
    expect(component.properties?.kind.const).toBe(kind);
    expect(Object.keys(component.properties?.data.properties ?? {}).sort()).toEqual(
      Object.keys(EVENT_DATA[kind].shape).sort(),
    );
  });

  it("gives an Event as one of the kinds, told apart by kind, or an earlier version's event", () => {
    const [head, kinds] = schemas.Event.allOf ?? [];
    expect(Object.keys(head.properties ?? {})).toEqual(["id", "at", "message"]);
    const [known, earlier] = kinds.anyOf ?? [];
    expect(known.discriminator?.propertyName).toBe("kind");
    expect(Object.keys(known.discriminator?.mapping ?? {})).toEqual(EVENT_KINDS);
    expect(earlier).toEqual({ $ref: "#/components/schemas/Event.earlier" });
  });
});

describe("events an earlier version stored", () => {
  let data = "";
  let store: SqliteStore | undefined;
  afterEach(async () => {
    await store?.close();
    store = undefined;
    if (data) cleanup(data);
  });

  it("read from a store of release 0.1.0, and show the message they were stored with", async () => {
    data = tempDir("steward-events-");
    cpSync(join(ROOT, "test/fixtures/store-0.1.0-schema7"), data, { recursive: true });
    store = new SqliteStore(join(data, "steward.db"));
    await store.open();
    const flaky = await store.events("3");
    expect(flaky.map((event) => [event.kind, event.message])).toContainEqual([
      "attempt.failed",
      "attempt 1 on local-1 failed (exit 3): failed; retry 2 of 3 in 0.9 s",
    ]);
    for (const event of [...flaky, ...(await store.events("4"))]) {
      const view = eventView(event);
      expect(view.message).toBe(event.message);
      // The API's event shape takes them, data and all, though their data predates the schemas.
      expect(eventSchema.parse(view)).toEqual(view);
    }
  });

  it("of a kind this version does not know, show their stored message", () => {
    const event = {
      id: 9,
      jobId: "41",
      at: 1_700_000_000_000,
      kind: "pool.grown",
      data: { pool: "slurm", by: 2 },
      message: "pool slurm asked for 2 more pilots",
    };
    expect(Object.hasOwn(EVENT_DATA, event.kind)).toBe(false);
    const view = eventView(event);
    expect(view).toMatchObject({ kind: "pool.grown", message: "pool slurm asked for 2 more pilots" });
    expect(eventSchema.parse(view)).toEqual(view);
    expect(streamEventSchema.parse({ jobId: "41", ...view })).toEqual({ jobId: "41", ...view });
  });
});

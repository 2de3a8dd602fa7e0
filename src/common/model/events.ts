// The kinds of event a job's history holds, each with its data as a schema (the OpenAPI document
// shows them), and the one English rendering of each. The reactor and the scheduler give a kind and
// its data; the message is rendered from them here, never at the place that decided.

import { z } from "zod";
import { DEPENDENCY_CONDITIONS, unmetMessage } from "./dependencies.ts";
import type { EndCause } from "./end-cause.ts";
import { ATTEMPT_OUTCOMES, type AttemptOutcome, JOB_STATES } from "./states.ts";
import { renderStopReason } from "./stop-reasons.ts";
import { renderUpdateChange, UPDATE_FIELDS } from "./update-fields.ts";

const END_CAUSES = ["host", "staging", "undelivered", "oom"] as const satisfies readonly EndCause[];

const task = z.int().meta({ description: "the task's index" });
const attempt = z.int().meta({ description: "the attempt's number" });
const host = z.string();
const array = z
  .boolean()
  .meta({ description: "the job has more than one task (then the message names the task)" });
const by = z.string().meta({ description: "who asked" });

/** What an attempt's end did to its task: the task's next step, with the counts behind it. */
const taskNextSchema = z
  .discriminatedUnion("is", [
    z.object({ is: z.literal("succeeded") }).meta({ description: "the attempt is the task's result" }),
    z.object({ is: z.literal("cancelled") }),
    z
      .object({ is: z.literal("failed"), failures: z.int(), maxAttempts: z.int() })
      .meta({ description: "the retry budget is used up: the task failed" }),
    z
      .object({
        is: z.literal("retry"),
        failures: z.int(),
        maxAttempts: z.int(),
        delayMs: z.int().meta({ description: "the back-off before the next attempt" }),
        memoryMb: z
          .number()
          .optional()
          .meta({ description: "the memory (MB) the next attempt takes, grown after running out of memory" }),
      })
      .meta({ description: "the task is tried again after a back-off" }),
    z
      .object({ is: z.literal("poison"), losses: z.int() })
      .meta({ description: "lost too often: the task failed as a poison task" }),
    z
      .object({ is: z.literal("restart") })
      .meta({ description: "a system event (lost host, preemption, migration): the task goes round again" }),
    z
      .object({ is: z.literal("systemFailed"), systemFailures: z.int() })
      .meta({ description: "too many system failures (staging, undelivered start): the task failed" }),
    z
      .object({ is: z.literal("systemRetry"), delayMs: z.int() })
      .meta({ description: "a system failure: the task goes round again after a back-off" }),
    z
      .object({
        is: z.literal("replicasRunning"),
        others: z.int(),
        failures: z.int(),
        maxAttempts: z.int(),
      })
      .meta({ description: "other replicas of the task still run: the task goes on running" }),
    z
      .object({ is: z.literal("lostRace") })
      .meta({ description: "a replica stopped because another gave the task its result" }),
  ])
  .meta({ id: "TaskNext" });
export type TaskNext = z.infer<typeof taskNextSchema>;

function attemptEnded<O extends AttemptOutcome>(outcome: O) {
  return z.object({
    task,
    attempt,
    host,
    outcome: z.literal(outcome),
    exitCode: z.int().nullable(),
    reason: z.string().nullable(),
    cause: z
      .enum(END_CAUSES)
      .optional()
      .meta({ description: "for `lost`: whose failure it was; `oom`: killed for its memory limit" }),
    array,
    next: taskNextSchema,
  });
}

const contractNumbers = {
  task,
  attempt,
  host,
  ratePerMinute: z.number(),
  minProgressPerMinute: z.number(),
  graceSeconds: z.number(),
  belowSince: z.number().meta({ description: "ms since the epoch" }),
  belowSeconds: z.number(),
  windowSeconds: z.number(),
  fromFraction: z.number(),
  toFraction: z.number(),
  measuredSeconds: z.number(),
  array,
};

/** Each kind of event and its data. */
export const EVENT_DATA = {
  submitted: z.object({ owner: z.string(), tasks: z.int() }),
  state: z.object({ from: z.enum(JOB_STATES), to: z.enum(JOB_STATES) }),
  dependencies: z
    .object({
      dependency: z.string().meta({ description: "the job depended on that ended" }),
      state: z.enum(JOB_STATES).meta({ description: "how it ended" }),
    })
    .meta({
      description:
        "a dependency ended and the job's waiting tasks may go (one that can never be met is `dependency.unmet`; before it, this event also told of a dependency that did not succeed)",
    }),
  "dependency.unmet": z
    .object({
      dependency: z.string().meta({ description: "the job depended on" }),
      when: z.enum(DEPENDENCY_CONDITIONS).meta({ description: "what this job waited for it to do" }),
      state: z
        .enum(JOB_STATES)
        .nullable()
        .meta({ description: "how it (or its tasks, for `tasks: same`) ended; null: it was removed" }),
      tasks: z.string().nullable().meta({
        description: "`tasks: same`: the tasks cancelled (a list such as `3, 7-9`); null: every waiting task",
      }),
    })
    .meta({ description: "a dependency can no longer be met: the tasks waiting on it were cancelled" }),
  cancel: z.object({
    by,
    tasks: z
      .string()
      .optional()
      .meta({ description: "the tasks cancelled (`3, 7-9`); absent: the whole job" }),
  }),
  retried: z
    .object({
      by,
      tasks: z.string().meta({ description: "the tasks given new attempts, as a list such as `3, 7-9`" }),
      count: z.int().meta({ description: "how many tasks" }),
      array,
      workflow: z
        .string()
        .optional()
        .meta({ description: "the workflow whose retry this was (steward retry flow-ID)" }),
    })
    .meta({ description: "failed or cancelled tasks were given new attempts (steward retry)" }),
  hold: z.object({
    by,
    reason: z.string().optional().meta({ description: "why, as `steward hold --reason` gave it" }),
  }),
  release: z.object({ by }),
  migrate: z.object({ to: z.string().nullable().meta({ description: "null: any other host" }), by }),
  updated: z
    .object({
      by,
      changes: z
        .array(
          z.object({
            field: z.enum(UPDATE_FIELDS),
            from: z.union([z.number(), z.string()]).nullable().meta({ description: "null: none" }),
            to: z.union([z.number(), z.string()]).nullable().meta({ description: "null: none" }),
          }),
        )
        .meta({ description: "the fields the update changed, with their values before and after" }),
    })
    .meta({ description: "a job not yet running was updated (steward update)" }),
  "attempt.placed": z.object({ task, attempt, host }),
  restart: z.object({
    task,
    attempt,
    host,
    checkpoint: z.int().nullable().meta({ description: "the checkpoint generation it restarts from" }),
    checkpointBytes: z.int().nullable(),
    migration: z.object({ to: z.string().nullable(), from: z.string() }).optional(),
    array,
  }),
  "replica.placed": z.object({ task, attempt, host, replica: z.int(), replicas: z.int() }),
  "attempt.succeeded": attemptEnded("succeeded"),
  "attempt.failed": attemptEnded("failed"),
  "attempt.lost": attemptEnded("lost"),
  "attempt.preempted": attemptEnded("preempted"),
  "attempt.migrated": attemptEnded("migrated"),
  "attempt.cancelled": attemptEnded("cancelled"),
  "attempt.timed_out": attemptEnded("timed_out"),
  "gang.failed": z.object({
    attempt,
    rank: z.int(),
    host,
    outcome: z.enum(ATTEMPT_OUTCOMES),
    exitCode: z.int().nullable(),
  }),
  "requirements.refused": z.object({
    task,
    attempt,
    host,
    requirements: z.string(),
    error: z.string(),
  }),
  "requirements.changed": z.object({
    task,
    attempt,
    host,
    requirements: z.string(),
    previous: z.string().nullable(),
    array,
  }),
  "requirements.migrate": z.object({
    task,
    attempt,
    host,
    requirements: z.string(),
    why: z.string(),
    array,
  }),
  "contract.stays": z.object(contractNumbers),
  "contract.broken": z.object(contractNumbers),
  "walltime.migrate": z.object({
    task,
    attempt,
    host,
    secondsLeft: z.number(),
    marginSeconds: z.number(),
    array,
  }),
  preempt: z.object({
    task,
    attempt,
    host,
    for: z.string().meta({ description: "the job it makes room for" }),
    forPriority: z.number(),
    forQos: z.string().optional().meta({
      description: "the QoS tier of the job it makes room for, when the tiers decided (not the same tier)",
    }),
    remainingSeconds: z.number(),
  }),
  reschedule: z.object({
    task,
    attempt,
    from: z.string(),
    to: z.string(),
    gain: z.number(),
    remainingHere: z.number(),
    remainingThere: z.number(),
    costSeconds: z.number(),
  }),
} as const;

export type EventKind = keyof typeof EVENT_DATA;
export type EventData<K extends EventKind> = z.infer<(typeof EVENT_DATA)[K]>;
/** One event of a job's history as it is decided: a kind and its data. */
export type JobEvent = { [K in EventKind]: { kind: K; data: EventData<K> } }[EventKind];

export const EVENT_KINDS = Object.keys(EVENT_DATA) as EventKind[];

/** "task 3" or "tasks 3, 7-9", from a list as formatTaskList writes it. */
const taskWord = (list: string) => (/^\d+$/.test(list) ? `task ${list}` : `tasks ${list}`);
const seconds = (value: number) => `${Math.round(value)} s`;
const who = (data: { array: boolean; task: number }) => (data.array ? `task ${data.task} ` : "");
const failureWord = (outcome: AttemptOutcome) => (outcome === "timed_out" ? "timed out" : outcome);

/** The reason a broken contract stops its attempt with, as the contract events name it. */
const contractBreach = (d: EventData<"contract.broken">) =>
  renderStopReason({
    kind: "contract-broken",
    host: d.host,
    ratePerMinute: d.ratePerMinute,
    minProgressPerMinute: d.minProgressPerMinute,
    belowSeconds: d.belowSeconds,
  });

/** What an attempt's end did to its task, in words (the end's outcome and reason complete it). */
export function renderTaskNext(
  next: TaskNext,
  end: { outcome: AttemptOutcome; reason: string | null },
): string {
  const { outcome, reason } = end;
  switch (next.is) {
    case "succeeded":
    case "cancelled":
      return next.is;
    case "failed":
      return `${failureWord(outcome)} (${next.failures} of ${next.maxAttempts} attempts used)${reason ? `: ${reason}` : ""}`;
    case "retry":
      return `${failureWord(outcome)}; retry ${next.failures + 1} of ${next.maxAttempts} in ${(next.delayMs / 1000).toFixed(1)} s${next.memoryMb === undefined ? "" : ` with ${next.memoryMb} MB`}`;
    case "poison":
      return `poison task: lost ${next.losses} times`;
    case "restart":
      return `${outcome === "lost" && reason ? `lost (${reason})` : outcome}; restarting`;
    case "systemFailed":
      return `system failure ${next.systemFailures} times${reason ? `: ${reason}` : ""}`;
    case "systemRetry":
      return `system failure${reason ? `: ${reason}` : ""}; restarting in ${(next.delayMs / 1000).toFixed(1)} s`;
    case "replicasRunning": {
      const still = `${next.others} other replica${next.others === 1 ? "" : "s"} still running`;
      if (outcome === "failed" || outcome === "timed_out")
        return `${failureWord(outcome)} (${next.failures} of ${next.maxAttempts} attempts used); ${still}`;
      return `${outcome}${reason ? ` (${reason})` : ""}; ${still}`;
    }
    case "lostRace":
      return reason ?? outcome;
  }
}

/** The data of an attempt's end, whatever its outcome. */
export type AttemptEndData = EventData<`attempt.${AttemptOutcome}`>;

/** An attempt's end as an event: its kind names the outcome its data holds. */
export function attemptEndEvent(data: AttemptEndData): JobEvent {
  return { kind: `attempt.${data.outcome}`, data } as JobEvent;
}

function attemptEndMessage(data: AttemptEndData): string {
  const exit = data.exitCode === null ? "" : ` (exit ${data.exitCode})`;
  return `${who(data)}attempt ${data.attempt} on ${data.host} ${data.outcome}${exit}: ${renderTaskNext(data.next, data)}`;
}

const RENDER: { [K in EventKind]: (data: EventData<K>) => string } = {
  submitted: (d) => `${d.tasks === 1 ? "job" : `array of ${d.tasks} tasks`} submitted by ${d.owner}`,
  state: (d) => `${d.from} -> ${d.to}`,
  dependencies: (d) =>
    d.state === "succeeded" ? "dependencies succeeded" : `dependency ${d.dependency} ended ${d.state}`,
  "dependency.unmet": (d) => unmetMessage(d),
  cancel: (d) =>
    d.tasks === undefined
      ? `cancel requested by ${d.by}`
      : `cancel of ${taskWord(d.tasks)} requested by ${d.by}`,
  retried: (d) =>
    (d.array ? `retried by ${d.by}: ${taskWord(d.tasks)}` : `retried by ${d.by}`) +
    (d.workflow ? ` with workflow ${d.workflow}` : ""),
  hold: (d) => `held by ${d.by}${d.reason ? `: ${d.reason}` : ""}`,
  release: (d) => `released by ${d.by}`,
  migrate: (d) => `migration ${d.to ? `to ${d.to}` : "to another host"} requested by ${d.by}`,
  updated: (d) => `updated by ${d.by}: ${d.changes.map(renderUpdateChange).join("; ")}`,
  "attempt.placed": (d) => `attempt ${d.attempt} placed on ${d.host}`,
  restart: (d) =>
    `${who(d)}attempt ${d.attempt} on ${d.host} restarts ` +
    (d.checkpoint === null
      ? "from the beginning: no checkpoint"
      : `from checkpoint generation ${d.checkpoint} (${d.checkpointBytes} bytes)`),
  "replica.placed": (d) =>
    `replica ${d.replica} of task ${d.task} placed on ${d.host} (attempt ${d.attempt})`,
  "attempt.succeeded": attemptEndMessage,
  "attempt.failed": attemptEndMessage,
  "attempt.lost": attemptEndMessage,
  "attempt.preempted": attemptEndMessage,
  "attempt.migrated": attemptEndMessage,
  "attempt.cancelled": attemptEndMessage,
  "attempt.timed_out": attemptEndMessage,
  "gang.failed": (d) =>
    `attempt ${d.attempt}: ${renderStopReason({ kind: "gang-failed", rank: d.rank, host: d.host, outcome: d.outcome, exitCode: d.exitCode })}`,
  "requirements.refused": (d) => `requirements file: ${d.error}`,
  "requirements.changed": (d) =>
    `${who(d)}attempt ${d.attempt} wrote new requirements: ${d.requirements} (they replace ${d.previous ?? "none"})`,
  "requirements.migrate": (d) =>
    `${who(d)}attempt ${d.attempt}: ${d.host} no longer satisfies the requirements (${d.why}): migrating`,
  "contract.stays": (d) =>
    `${who(d)}attempt ${d.attempt} broke its ${contractBreach(d)}, but no other host can run the job: it stays`,
  "contract.broken": (d) =>
    `${who(d)}attempt ${d.attempt} broke its ${contractBreach(d)}` +
    ` (measured over ${d.measuredSeconds.toFixed(0)} s, ${d.fromFraction.toFixed(3)} -> ` +
    `${d.toFraction.toFixed(3)}): migrating; ${d.host} now ranks last for this job`,
  "walltime.migrate": (d) =>
    `${who(d)}attempt ${d.attempt} leaves ${d.host}: its walltime ends in ${d.secondsLeft} s; migrating with its checkpoint`,
  preempt: (d) =>
    `task ${d.task} attempt ${d.attempt} on ${d.host} preempted for job ${d.for} (${d.forQos === undefined ? "" : `QoS ${d.forQos}, `}priority ${d.forPriority}): ` +
    `${seconds(d.remainingSeconds)} of its work left, the most of the preemptible tasks`,
  reschedule: (d) =>
    `task ${d.task} attempt ${d.attempt} migrated to ${d.to}: estimated gain ${d.gain.toFixed(2)} ` +
    `(remaining ${seconds(d.remainingHere)} here, ${seconds(d.remainingThere)} + ${seconds(d.costSeconds)} move there)`,
};

/** The message a job's history shows for an event (the CLI, the dashboard and the API print it). */
export function renderEventMessage<K extends EventKind>(kind: K, data: EventData<K>): string {
  return (RENDER[kind] as (data: EventData<K>) => string)(data);
}

/** renderEventMessage of an event as it is decided. */
export function renderEvent(event: JobEvent): string {
  return renderEventMessage(event.kind, event.data as EventData<typeof event.kind>);
}

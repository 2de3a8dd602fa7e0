// Why the server stops an attempt, or ends one without its agent's word, as a kind and its data
// (the scheduler and the reactor's handlers decide them; StopIntent keeps one), and the one English
// rendering of each: the text an attempt's end reason, its events, `steward` output and the agent's
// stop message carry. A reason an agent gave as text, or that an earlier version stored as text, is
// kind `text`. Rendered where the text leaves the decision: stored as the attempt's end reason,
// sent in a stop, shown.

import type { AttemptOutcome } from "./states.ts";

export type StopReason =
  /** `steward cancel`, of the job or of some of its tasks. */
  | { kind: "user-cancel" }
  /** `steward hold` (the attempt ends `preempted`). */
  | { kind: "held" }
  /** Another replica of the task gave it its result. */
  | { kind: "replica-lost" }
  /** `steward migrate`, to a named host or (null) to any other. */
  | { kind: "migrate-requested"; to: string | null }
  /** Preemption: room made for a job; `qos` names its tier when the tiers decided (else null). */
  | { kind: "preempted-for"; job: string; priority: number; qos: string | null }
  /** Rescheduling: moved to a faster host for the estimated gain. */
  | { kind: "rescheduled"; host: string; gain: number }
  /** The pilot the attempt runs on nears its walltime. */
  | { kind: "pilot-walltime" }
  /** A performance contract broken: progress below its minimum rate for `belowSeconds`. */
  | {
      kind: "contract-broken";
      host: string;
      ratePerMinute: number;
      minProgressPerMinute: number;
      belowSeconds: number;
    }
  /** The job wrote requirements its host no longer satisfies. */
  | { kind: "requirements-changed"; requirements: string }
  /** A rank of a gang ended short of success: the other ranks are stopped. */
  | { kind: "gang-failed"; rank: number; host: string; outcome: AttemptOutcome; exitCode: number | null }
  /** A gang's end, named after the rank that decided it, with that rank's own reason (null: its outcome). */
  | { kind: "rank-ended"; rank: number; host: string; outcome: AttemptOutcome; reason: StopReason | null }
  /** The host's lease ran out: silent for `seconds`. */
  | { kind: "host-silent"; host: string; seconds: number }
  /** `steward hosts rm` of a host that still counted the attempt live. */
  | { kind: "host-removed"; host: string; by: string }
  /** The host's agent said hello without the attempt. */
  | { kind: "agent-restarted" }
  /** The start could not be sent: the host's agent was not connected. */
  | { kind: "start-undelivered"; host: string }
  /** The attempt succeeded but did not give back every output file the job names. */
  | { kind: "outputs-missing"; files: string[] }
  /** A reason given as text: by an agent, or stored by an earlier version. */
  | { kind: "text"; text: string };

export type StopReasonKind = StopReason["kind"];
type ReasonOf<K extends StopReasonKind> = Extract<StopReason, { kind: K }>;

/** The text of a reason an attempt a hold stopped ends with (accounting tells such an attempt `held`). */
export const HELD_REASON = "held";

const RENDER: { [K in StopReasonKind]: (reason: ReasonOf<K>) => string } = {
  "user-cancel": () => "cancelled by user",
  held: () => HELD_REASON,
  "replica-lost": () => "replica lost the race",
  "migrate-requested": (r) => `migrating ${r.to === null ? "to another host" : `to ${r.to}`}`,
  "preempted-for": (r) =>
    `preempted for job ${r.job} (${r.qos === null ? "" : `QoS ${r.qos}, `}priority ${r.priority})`,
  rescheduled: (r) => `rescheduled to ${r.host}: estimated gain ${r.gain.toFixed(2)}`,
  "pilot-walltime": () => "pilot walltime",
  "contract-broken": (r) =>
    `contract: progress ${r.ratePerMinute.toFixed(3)}/min below ${r.minProgressPerMinute.toFixed(3)}/min ` +
    `for ${r.belowSeconds} s on ${r.host}`,
  "requirements-changed": (r) => `requirements changed: ${r.requirements}`,
  "gang-failed": (r) =>
    `rank ${r.rank} on ${r.host} ${r.outcome}${r.exitCode === null ? "" : ` (exit ${r.exitCode})`}: stopping the gang`,
  "rank-ended": (r) =>
    `rank ${r.rank} on ${r.host}: ${r.reason === null ? r.outcome : renderStopReason(r.reason)}`,
  "host-silent": (r) => `host ${r.host} silent for ${r.seconds.toFixed(1)} s`,
  "host-removed": (r) => `host ${r.host} removed by ${r.by}`,
  "agent-restarted": () => "the host's agent restarted without it",
  "start-undelivered": (r) => `the start could not be delivered: the agent of ${r.host} was not connected`,
  "outputs-missing": (r) => `output file${r.files.length > 1 ? "s" : ""} missing: ${r.files.join(", ")}`,
  text: (r) => r.text,
};

/** The text users see for a reason (the attempt's end reason, its events, the agent's stop message). */
export function renderStopReason(reason: StopReason): string {
  return (RENDER[reason.kind] as (reason: StopReason) => string)(reason);
}

/** The kinds without data, by their text: such a text an earlier version stored reads as its kind. */
const FIXED_TEXTS: ReadonlyMap<string, StopReason> = new Map(
  (
    [
      { kind: "user-cancel" },
      { kind: "held" },
      { kind: "replica-lost" },
      { kind: "pilot-walltime" },
      { kind: "agent-restarted" },
    ] as const satisfies readonly StopReason[]
  ).map((reason) => [renderStopReason(reason), reason]),
);

/**
 * A reason stored as text (by a version before reasons had kinds): the kind without data whose text
 * it is (so a stop `cancelled by user` still cancels its task), else kind `text`, which renders to
 * the text as it was.
 */
export function reasonFromText(text: string): StopReason {
  return FIXED_TEXTS.get(text) ?? { kind: "text", text };
}

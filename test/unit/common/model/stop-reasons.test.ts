// The reasons an attempt is stopped or ended with, each kind rendered to the exact text the
// attempt's end reason, its events, `steward` output and the agent's stop message carry (the texts
// the integration tests expect), and a reason an earlier version stored as text read back.

import { describe, expect, it } from "vitest";
import {
  HELD_REASON,
  reasonFromText,
  renderStopReason,
  type StopReason,
  type StopReasonKind,
} from "../../../../src/common/model/stop-reasons.ts";

type ReasonOf<K extends StopReasonKind> = Extract<StopReason, { kind: K }>;

/** Every kind (the type makes a missing one a compile error), with the texts it renders to. */
const CASES: { [K in StopReasonKind]: [ReasonOf<K>, string][] } = {
  "user-cancel": [[{ kind: "user-cancel" }, "cancelled by user"]],
  held: [[{ kind: "held" }, "held"]],
  "replica-lost": [[{ kind: "replica-lost" }, "replica lost the race"]],
  "migrate-requested": [
    [{ kind: "migrate-requested", to: "h3" }, "migrating to h3"],
    [{ kind: "migrate-requested", to: null }, "migrating to another host"],
  ],
  "preempted-for": [
    [{ kind: "preempted-for", job: "12", priority: 10, qos: null }, "preempted for job 12 (priority 10)"],
    [
      { kind: "preempted-for", job: "9", priority: 0, qos: "high" },
      "preempted for job 9 (QoS high, priority 0)",
    ],
  ],
  rescheduled: [
    [{ kind: "rescheduled", host: "fast", gain: 0.9 }, "rescheduled to fast: estimated gain 0.90"],
    [{ kind: "rescheduled", host: "mid", gain: 0.4666 }, "rescheduled to mid: estimated gain 0.47"],
  ],
  "pilot-walltime": [[{ kind: "pilot-walltime" }, "pilot walltime"]],
  "contract-broken": [
    [
      {
        kind: "contract-broken",
        host: "za",
        ratePerMinute: 0.06,
        minProgressPerMinute: 0.6,
        belowSeconds: 5,
      },
      "contract: progress 0.060/min below 0.600/min for 5 s on za",
    ],
  ],
  "requirements-changed": [
    [
      { kind: "requirements-changed", requirements: 'host.labels.zone == "b"' },
      'requirements changed: host.labels.zone == "b"',
    ],
  ],
  "gang-failed": [
    [
      { kind: "gang-failed", rank: 2, host: "n3", outcome: "failed", exitCode: 7 },
      "rank 2 on n3 failed (exit 7): stopping the gang",
    ],
    [
      { kind: "gang-failed", rank: 1, host: "n2", outcome: "lost", exitCode: null },
      "rank 1 on n2 lost: stopping the gang",
    ],
  ],
  "rank-ended": [
    [
      {
        kind: "rank-ended",
        rank: 1,
        host: "h2",
        outcome: "lost",
        reason: { kind: "host-silent", host: "h2", seconds: 3.14 },
      },
      "rank 1 on h2: host h2 silent for 3.1 s",
    ],
    [{ kind: "rank-ended", rank: 1, host: "h2", outcome: "failed", reason: null }, "rank 1 on h2: failed"],
    [
      { kind: "rank-ended", rank: 0, host: "b", outcome: "failed", reason: { kind: "text", text: "" } },
      "rank 0 on b: ",
    ],
  ],
  "host-silent": [
    [{ kind: "host-silent", host: "h1", seconds: 12.345 }, "host h1 silent for 12.3 s"],
    [{ kind: "host-silent", host: "h1", seconds: 10 }, "host h1 silent for 10.0 s"],
  ],
  "host-removed": [[{ kind: "host-removed", host: "h3", by: "admin" }, "host h3 removed by admin"]],
  "agent-restarted": [[{ kind: "agent-restarted" }, "the host's agent restarted without it"]],
  "start-undelivered": [
    [
      { kind: "start-undelivered", host: "h1" },
      "the start could not be delivered: the agent of h1 was not connected",
    ],
  ],
  "outputs-missing": [
    [{ kind: "outputs-missing", files: ["out"] }, "output file missing: out"],
    [
      { kind: "outputs-missing", files: ["rank-1/a", "rank-1/b"] },
      "output files missing: rank-1/a, rank-1/b",
    ],
  ],
  text: [
    [{ kind: "text", text: "time limit of 5 s reached" }, "time limit of 5 s reached"],
    [{ kind: "text", text: "" }, ""],
  ],
};

const ALL = Object.values(CASES).flat() as [StopReason, string][];

describe("renderStopReason", () => {
  it.each(ALL)("%j -> %j", (reason, text) => {
    expect(renderStopReason(reason)).toBe(text);
  });

  it("renders a hold as HELD_REASON, the text accounting tells a hold's attempt by", () => {
    expect(renderStopReason({ kind: "held" })).toBe(HELD_REASON);
  });
});

describe("reasonFromText: a reason an earlier version stored as text", () => {
  it.each<[string, StopReason]>([
    ["cancelled by user", { kind: "user-cancel" }],
    ["held", { kind: "held" }],
    ["replica lost the race", { kind: "replica-lost" }],
    ["pilot walltime", { kind: "pilot-walltime" }],
    ["the host's agent restarted without it", { kind: "agent-restarted" }],
    // Texts with data stay text: they render as they were stored.
    ["migrating to h3", { kind: "text", text: "migrating to h3" }],
    ["preempted for job 12 (priority 10)", { kind: "text", text: "preempted for job 12 (priority 10)" }],
    ["host h1 silent for 12.3 s", { kind: "text", text: "host h1 silent for 12.3 s" }],
    ["making room for job 99", { kind: "text", text: "making room for job 99" }],
    ["Cancelled by user", { kind: "text", text: "Cancelled by user" }],
    ["", { kind: "text", text: "" }],
  ])("%j reads as %j", (text, reason) => {
    expect(reasonFromText(text)).toStrictEqual(reason);
  });

  it("renders every text back to itself", () => {
    for (const [, text] of ALL) expect(renderStopReason(reasonFromText(text))).toBe(text);
  });
});

// The queue's walk in a pass: whose turn it is, band by band (QoS tier priority), owners taking
// turns by fair share within a band (their shares growing with what they place, a gang's by every
// rank), one owner's jobs in queue order; a job held by a running limit, and those behind it held
// alike, passed over.

import { describe, expect, it } from "vitest";
import type { OwnerShare } from "../../../../src/broker/scheduler/fair-share.ts";
import { compareQueueOrder } from "../../../../src/broker/scheduler/queue-order.ts";
import { QueueTurns } from "../../../../src/broker/scheduler/turns.ts";
import type { JobView } from "../../../../src/broker/scheduler/view.ts";
import { jobView } from "../../../helpers/scheduler-views.ts";

interface Walk {
  /** `owner:id`, or `owner:id@tier`, in submit order (`:id`: a job of no owner). */
  jobs: string[];
  /** The ranks of each gang, by job. */
  gangs?: Record<string, number>;
  /** How many turns in a row each job places in (absent: none, it is passed at its first turn). */
  places?: Record<string, number>;
  /** Jobs a running limit holds. */
  held?: string[];
  /** Owners all of whose jobs are held (their group at its cpu limit). */
  ownersHeld?: string[];
  owners?: Record<string, OwnerShare>;
  /** Cpus placed per owner before the queue's turns. */
  placedCpus?: Record<string, number>;
  /** Whether the pass tells why each job is not placed (explain's dry run). */
  explaining?: boolean;
  /** Collects each job the walk tells why of while explaining, in order. */
  told?: string[];
}

/** The jobs in the order their turns came, and those passed over as held without a turn. */
function walk(input: Walk): { turns: string[]; passedOver: string[] } {
  const jobs: JobView[] = input.jobs
    .map((text, seq) => {
      const [owner, rest] = text.split(":");
      const [id, tier] = rest.split("@");
      const nodes = input.gangs?.[id];
      const gang = nodes === undefined ? undefined : { nodes, nodesPerHost: 1, restartPool: null };
      const qosPriority = tier === undefined ? 0 : Number(tier);
      return jobView(id, { owner: owner === "" ? undefined : owner, seq, qosPriority, gang });
    })
    .sort(compareQueueOrder);
  const held = new Set(input.held ?? []);
  const passedOver: string[] = [];
  const turns = new QueueTurns<true>(
    { now: 0, jobs, hosts: [], owners: new Map(Object.entries(input.owners ?? {})) },
    new Map(Object.entries(input.placedCpus ?? {})),
    {
      held: (job) => (held.has(job.id) ? "held" : null),
      ownerHeld: (owner) => (input.ownersHeld ?? []).includes(owner),
    },
    input.explaining
      ? {
          unplaced: (job) => {
            passedOver.push(job.id);
            input.told?.push(job.id);
          },
        }
      : {},
  );
  const left = new Map(Object.entries(input.places ?? {}));
  const seen: string[] = [];
  for (let lane = turns.next(); lane !== null && seen.length < 100; lane = turns.next()) {
    const job = lane.head;
    seen.push(job.id);
    if (held.has(job.id)) {
      turns.held();
      continue;
    }
    const more = left.get(job.id) ?? 0;
    left.set(job.id, more - 1);
    if (more > 0) turns.placed(job);
    else turns.passed();
  }
  return { turns: seen, passedOver: input.explaining ? passedOver.filter((id) => !seen.includes(id)) : [] };
}

describe("QueueTurns", () => {
  it.each<[string, Walk, string[]]>([
    ["one owner's jobs in queue order", { jobs: ["a:1", "a:2", "a:3"] }, ["1", "2", "3"]],
    ["a job that places keeps its turn", { jobs: ["a:1", "a:2"], places: { "1": 2 } }, ["1", "1", "1", "2"]],
    ["a higher tier first, whatever the owner", { jobs: ["a:1", "b:2@5", "a:3@5"] }, ["2", "3", "1"]],
    ["equal shares: submit order between owners", { jobs: ["b:1", "a:2", "b:3"] }, ["1", "2", "3"]],
    [
      "owners alternate as their shares grow",
      { jobs: ["a:1", "b:2"], places: { "1": 2, "2": 2 } },
      ["1", "2", "1", "2", "1", "2"],
    ],
    [
      "the owner running fewer cpus first",
      { jobs: ["a:1", "b:2"], owners: { a: { runningCpus: 2, recentCpuSeconds: 0 } } },
      ["2", "1"],
    ],
    [
      "cpus placed before the turns count into the share",
      { jobs: ["a:1", "b:2"], placedCpus: { a: 1 } },
      ["2", "1"],
    ],
    [
      "a gang's placement grows its owner's share by every rank",
      { jobs: ["a:1", "b:2"], gangs: { "1": 3 }, places: { "1": 1, "2": 3 } },
      ["1", "2", "2", "2", "1", "2"],
    ],
    [
      "a job of no owner is the anonymous owner's",
      { jobs: [":1", "b:2"], placedCpus: { "": 1 } },
      ["2", "1"],
    ],
    [
      "the owner with the higher fair-share factor first",
      { jobs: ["a:1", "b:2"], owners: { a: { runningCpus: 0, recentCpuSeconds: 0, factor: 0.5 } } },
      ["2", "1"],
    ],
    [
      "a held job's followers held alike are passed over without a turn",
      { jobs: ["a:1", "a:2", "a:3", "a:4"], held: ["1", "2", "3"] },
      ["1", "4"],
    ],
    ["only the held followers of its own band", { jobs: ["a:1@5", "a:2"], held: ["1", "2"] }, ["1", "2"]],
    [
      "an owner all of whose jobs are held leaves the walk at once",
      { jobs: ["a:1", "b:2", "a:3"], held: ["1", "3"], ownersHeld: ["a"] },
      ["1", "2"],
    ],
    [
      "an owner held in every band leaves every band",
      { jobs: ["a:1@5", "a:2", "b:3"], held: ["1", "2"], ownersHeld: ["a"] },
      ["1", "3"],
    ],
  ])("%s", (_, input, expected) => {
    expect(walk(input).turns).toStrictEqual(expected);
  });

  it("while the pass tells why, an owner all of whose jobs are held has each passed over", () => {
    const input = { jobs: ["a:1", "b:2", "a:3", "a:4"], held: ["1", "3", "4"], ownersHeld: ["a"] };
    expect(walk({ ...input, explaining: true })).toStrictEqual({ turns: ["1", "2"], passedOver: ["3", "4"] });
    expect(walk(input)).toStrictEqual({ turns: ["1", "2"], passedOver: [] });
  });

  it("tells nothing more of a held job, which the pass told of, only of the followers it passes over", () => {
    const told: string[] = [];
    const { turns } = walk({ jobs: ["a:1", "a:2", "a:3"], held: ["1", "2"], explaining: true, told });
    expect(turns).toStrictEqual(["1", "3"]);
    expect(told).toStrictEqual(["2"]);
  });
});

// The QoS policy at submit and update, through the handlers on the state alone (no store, no
// clock): a tier the submitter may not use or that does not exist is refused (400), the queued
// tasks of the owner's tier and of their group are counted from the state (429 over a limit), a
// job without a time limit gets its tier's, and an update is checked against the same limits.

import { describe, expect, it } from "vitest";
import { draftJob } from "../../../../../src/broker/planner/explain-job.ts";
import { InvalidRequestError, QuotaError } from "../../../../../src/broker/reactor/errors.ts";
import { attachHost } from "../../../../../src/broker/reactor/handlers/agent-reports.ts";
import { admitSpec, submitJob } from "../../../../../src/broker/reactor/handlers/submit.ts";
import { createToken, revokeToken } from "../../../../../src/broker/reactor/handlers/tokens.ts";
import { updateJob } from "../../../../../src/broker/reactor/handlers/update.ts";
import type { ShareNode } from "../../../../../src/broker/scheduler/fair-share-tree.ts";
import { ClusterState } from "../../../../../src/broker/state/cluster-state.ts";
import { validateJobSpec } from "../../../../../src/common/model/job-spec.ts";
import { parseQosFile } from "../../../../../src/common/model/qos-file.ts";
import { parseSharesFile } from "../../../../../src/common/model/shares-file.ts";
import { newTokenOf } from "../../../../../src/common/model/tokens.ts";
import { hello } from "../../../../helpers/agent-messages.ts";
import { HandlerBench } from "../../../../helpers/handler-bench.ts";

const NOW = 1_000_000;

const POLICY = parseQosFile(`
tiers:
  normal:
    maxQueuedTasks: 5
    maxRunningCpus: 4
    maxWallSeconds: 600
  high:
    priority: 10
groups:
  physics:
    maxQueuedTasks: 8
`);

function bench(): HandlerBench {
  const b = new HandlerBench(new ClusterState({}, POLICY));
  b.run((step) => attachHost(step, hello("h1", [], 1)));
  for (const user of ["alice", "carol"])
    b.run((step) =>
      createToken(step, {
        token: newTokenOf("api"),
        subject: user,
        role: "user",
        pool: null,
        createdBy: "admin",
        expiresAt: null,
        group: "physics",
      }),
    );
  return b;
}

function submit(
  b: HandlerBench,
  id: string,
  spec: Record<string, unknown>,
  owner = "alice",
  allowedQos: string[] | null = ["normal"],
) {
  return b.run((step) =>
    submitJob(step, {
      id,
      spec: validateJobSpec({ command: "true", ...spec }),
      owner,
      inputs: [],
      allowedQos,
    }),
  );
}

describe("submit under a QoS policy", () => {
  it("refuses a tier the token does not allow, or that does not exist, creating nothing", () => {
    const b = bench();
    expect(() => submit(b, "1", { qos: "high" })).toThrow(
      new InvalidRequestError("qos", "user alice may not use QoS high; their token allows normal"),
    );
    expect(() => submit(b, "2", { qos: "gold" }, "alice", null)).toThrow(
      new InvalidRequestError("qos", "no QoS tier gold; the tiers are normal, high"),
    );
    expect(b.state.jobs.size).toBe(0);
    submit(b, "3", { qos: "high" }, "alice", ["normal", "high"]);
    expect(b.state.jobs.get("3")?.qosPriority).toBe(10);
  });

  it("counts the owner's tasks not ended in the tier, then the group's, from the state", () => {
    const b = bench();
    submit(b, "1", { array: { count: 4 } });
    // Another tier's tasks do not count against normal's limit.
    submit(b, "2", { qos: "high", array: { count: 3 } }, "alice", null);
    expect(() => submit(b, "3", { array: { count: 2 } })).toThrow(
      new QuotaError(
        "qos",
        "user alice has 4 tasks queued (not ended) in QoS normal and the limit is 5; this job adds 2",
      ),
    );
    submit(b, "4", {});
    // The group counts every tier of its users: 4 + 3 + 1 of alice's.
    expect(() => submit(b, "5", {}, "carol")).toThrow(
      new QuotaError(
        "qos",
        "group physics has 8 tasks queued (not ended) and the limit is 8; this job adds 1",
      ),
    );
    expect([...b.state.jobs.keys()]).toStrictEqual(["1", "2", "4"]);
  });

  it("counts in a group's limit only the tasks of its own users", () => {
    const b = bench();
    // dave has no group: his 9 tasks are not physics's, whose limit is 8.
    submit(b, "1", { qos: "high", array: { count: 9 } }, "dave", null);
    submit(b, "2", {}, "alice");
    expect([...b.state.jobs.keys()]).toStrictEqual(["1", "2"]);
  });

  it("gives a job without a time limit its tier's, and refuses one above it", () => {
    const b = bench();
    submit(b, "1", {});
    expect(b.state.jobs.get("1")?.record.spec.timeLimitSeconds).toBe(600);
    submit(b, "2", { timeLimitSeconds: 60 });
    expect(b.state.jobs.get("2")?.record.spec.timeLimitSeconds).toBe(60);
    expect(() => submit(b, "3", { timeLimitSeconds: 601 })).toThrow(
      "timeLimitSeconds: QoS normal allows a time limit of 600 s at most, and the job asks for 601 s",
    );
  });
});

describe("update under a QoS policy", () => {
  it("checks the new job file against its tier's limits, leaving the job's own tasks out of the count", () => {
    const b = bench();
    submit(b, "1", { array: { count: 5 }, requirements: 'host.name == "nowhere"' });
    // At the limit of 5 with its own 5 tasks: a new priority is still taken.
    b.run((step) => updateJob(step, { id: "1", update: { priority: 3 }, by: "alice" }));
    expect(b.state.jobs.get("1")?.priority).toBe(3);
    expect(() =>
      b.run((step) => updateJob(step, { id: "1", update: { timeLimitSeconds: 3600 }, by: "alice" })),
    ).toThrow("timeLimitSeconds: QoS normal allows a time limit of 600 s at most");
    expect(() =>
      b.run((step) => updateJob(step, { id: "1", update: { resources: { cpus: 8 } }, by: "alice" })),
    ).toThrow("a task of this job needs 8 CPUs and QoS normal allows a user 4 running: it could never start");
    expect(b.state.jobs.get("1")?.record.spec.timeLimitSeconds).toBe(600);
    expect(b.state.jobs.get("1")?.cpus).toBe(1);
  });

  it("counts a job moved into a tier with the tier's others: its own tasks were in another", () => {
    const b = bench();
    submit(b, "1", { array: { count: 5 } });
    submit(b, "2", { qos: "high", requirements: 'host.name == "nowhere"' }, "alice", null);
    // normal holds alice's 5 already, its limit: job 2's task, in high until now, would be a sixth.
    expect(() =>
      b.run((step) =>
        updateJob(step, { id: "2", update: { qos: "normal" }, by: "alice", allowedQos: ["normal"] }),
      ),
    ).toThrow(
      new QuotaError(
        "qos",
        "user alice has 5 tasks queued (not ended) in QoS normal and the limit is 5; this job adds 1",
      ),
    );
    expect(b.state.jobs.get("2")?.qos).toBe("high");
  });
});

describe("token create under a QoS policy", () => {
  it("refuses a tier the server does not have, naming the tiers", () => {
    const b = bench();
    const make = (qos: string[]) =>
      b.run((step) =>
        createToken(step, {
          token: newTokenOf("api"),
          subject: "dave",
          role: "user",
          pool: null,
          createdBy: "admin",
          expiresAt: null,
          qos,
        }),
      );
    expect(() => make(["normal", "gold"])).toThrow(
      new InvalidRequestError("qos", "no QoS tier gold; the tiers are normal, high"),
    );
    expect(make(["normal", "high"]).result.qos).toStrictEqual(["normal", "high"]);
  });
});

describe("a user's group", () => {
  const token = (
    id: string,
    subject: string,
    createdAt: number,
    group: string | null,
    revokedAt: number | null = null,
  ) => ({
    id,
    kind: "api" as const,
    subject,
    role: "user" as const,
    pool: null,
    parent: null,
    hash: "ab".repeat(32),
    createdAt,
    createdBy: "admin",
    expiresAt: null,
    revokedAt,
    group,
    qos: null,
  });

  it.each([
    ["one token's group", [token("a", "alice", 1, "physics")], { alice: "physics" }],
    [
      "the newest token naming one wins",
      [token("a", "alice", 2, "physics"), token("b", "alice", 1, "chem")],
      { alice: "physics" },
    ],
    [
      "a token naming none does not clear it",
      [token("a", "alice", 1, "physics"), token("b", "alice", 2, null)],
      { alice: "physics" },
    ],
    [
      "a revoked token's group does not count",
      [token("a", "alice", 2, "physics", 5), token("b", "alice", 1, "chem")],
      { alice: "chem" },
    ],
    ["no group", [token("a", "alice", 1, null)], {}],
  ])("%s", (_, tokens, expected) => {
    const state = new ClusterState({}, POLICY);
    for (const each of tokens) state.tokens.put(each);
    expect(Object.fromEntries(state.tokens.groups())).toStrictEqual(expected);
  });
});

describe("a token's group in fair share", () => {
  it("puts a user the shares tree names nowhere under the account of their group, until the token is revoked", () => {
    const tree = parseSharesFile("accounts:\n  physics: {shares: 1, users: {bob: 1}}\n");
    const b = new HandlerBench(new ClusterState({ tree }, POLICY));
    const made = b.run((step) =>
      createToken(step, {
        token: newTokenOf("api"),
        subject: "alice",
        role: "user",
        pool: null,
        createdBy: "admin",
        expiresAt: null,
        group: "physics",
      }),
    ).result;
    const accountOf = (state: ClusterState, user: string): string | null => {
      const walk = (node: ShareNode, parent: string | null): string | null => {
        if (node.kind === "user" && node.name === user) return parent;
        for (const child of node.children) {
          const found = walk(child, node.name);
          if (found !== null) return found;
        }
        return null;
      };
      return walk(state.owners.tree(NOW, [user]), null);
    };
    expect(accountOf(b.state, "alice")).toBe("physics");
    expect(accountOf(b.recovered(), "alice")).toBe("physics");
    b.run((step) => revokeToken(step, made.id, ["api"]));
    expect(accountOf(b.state, "alice")).toBe("root");
  });
});

describe("a dry run under a QoS policy", () => {
  it("is admitted or refused as the submit would be, and its draft is in its tier's band", () => {
    const b = bench();
    submit(b, "1", { array: { count: 5 } });
    expect(() => admitSpec(b.state, validateJobSpec({ command: "true" }), "alice", ["normal"])).toThrow(
      new QuotaError(
        "qos",
        "user alice has 5 tasks queued (not ended) in QoS normal and the limit is 5; this job adds 1",
      ),
    );
    const high = admitSpec(b.state, validateJobSpec({ command: "true", qos: "high" }), "alice", null);
    expect(draftJob(b.state, high, "alice", NOW).qosPriority).toBe(10);
    expect(b.state.jobs.size).toBe(1);
  });
});

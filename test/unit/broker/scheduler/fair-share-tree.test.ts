// The fair-share tree: the shares file's parser, the level factors and the users' ranks
// (scheduler/fair-share-tree.ts), the usage of running attempts and its decay (against the plain rules of test/helpers/fair-share-reference.ts), and what a user
// sees of the tree (shareLines).

import { describe, expect, it } from "vitest";
import { compareOwnerShares } from "../../../../src/broker/scheduler/fair-share.ts";
import {
  fairShareFactor,
  runningUsage,
  type ShareNode,
  shareLines,
  shareTreeOf,
} from "../../../../src/broker/scheduler/fair-share-tree.ts";
import { OwnerUsage } from "../../../../src/broker/state/owner-usage.ts";
import { recoverState } from "../../../../src/broker/state/recover.ts";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import { FLAT_SHARE_TREE, parseSharesFile } from "../../../../src/common/model/shares-file.ts";
import {
  attempt as attemptRecord,
  job as jobRecord,
  task as taskRecord,
} from "../../../conformance/store-suite.ts";
import { fairShareFactors, usageAt } from "../../../helpers/fair-share-reference.ts";

const DAY = 86_400;

describe("parseSharesFile", () => {
  it("reads nested accounts with their users, in file order", () => {
    const tree = parseSharesFile(`
accounts:
  physics:
    shares: 3
    users: {alice: 1, bob: 2}
    accounts:
      theory: {shares: 1.5, users: {dave: 1}}
  biology: {shares: 1}
`);
    expect(tree).toStrictEqual({
      accounts: [
        {
          name: "physics",
          shares: 3,
          users: [
            { name: "alice", shares: 1 },
            { name: "bob", shares: 2 },
          ],
          accounts: [{ name: "theory", shares: 1.5, users: [{ name: "dave", shares: 1 }], accounts: [] }],
        },
        { name: "biology", shares: 1, users: [], accounts: [] },
      ],
    });
  });

  it.each([
    ["no accounts", "{}", "accounts: missing: a shares file has an `accounts` mapping"],
    ["not a mapping", "- a", "a shares file must be a mapping with an `accounts` mapping"],
    ["accounts as a list", "accounts: [1]", "accounts: Invalid input: expected record, received array"],
    ["no share", "accounts: {physics: {shares: 0}}", "accounts.physics.shares: must be a positive number"],
    [
      "a share as text",
      "accounts: {a: {shares: '3'}}",
      "accounts.a.shares: Invalid input: expected number, received string",
    ],
    [
      "a negative user share",
      "accounts: {a: {shares: 1, users: {bob: -1}}}",
      "accounts.a.users.bob: must be a positive number",
    ],
    ["an unknown key", "accounts: {physics: {share: 1}}", "accounts.physics.share: unknown key"],
    [
      "a bad account name",
      "accounts: {'-x': {shares: 1}}",
      "accounts.-x: an account name is 1 to 63 letters, digits, _, . or -, not starting with _, . or -",
    ],
    [
      "the root's name",
      "accounts: {root: {shares: 1}}",
      "accounts.root: root is the top of the tree, above every account",
    ],
    [
      "a user in two accounts",
      "accounts: {a: {shares: 1, users: {alice: 1}}, b: {shares: 1, users: {alice: 2}}}",
      "accounts.b.users.alice: user alice is in two accounts (also at accounts.a.users.alice)",
    ],
    [
      "an account named twice",
      "accounts: {a: {shares: 1, accounts: {a: {shares: 1}}}}",
      "accounts.a.accounts.a: account a is named twice (also at accounts.a)",
    ],
  ])("refuses %s, naming the field", (_, text, message) => {
    expect(() => parseSharesFile(text)).toThrow(message);
  });

  it("refuses text that is not YAML", () => {
    expect(() => parseSharesFile("accounts:\n  a: {shares: 1\n")).toThrow(
      /^line 3, column 1: not valid YAML or JSON/,
    );
  });
});

describe("fairShareFactor: 2^(-U/S)", () => {
  it.each([
    ["used nothing", 0, 0.5, 1],
    ["used nothing, no share", 0, 0, 1],
    ["used its share", 0.5, 0.5, 0.5],
    ["used half its share", 0.25, 0.5, 2 ** -0.5],
    ["used twice its share", 0.5, 0.25, 0.25],
    ["no share, some usage", 0.1, 0, 0],
  ])("%s", (_, usage, shares, expected) => {
    expect(fairShareFactor(usage, shares)).toBeCloseTo(expected, 12);
  });
});

describe("runningUsage and usageAt: what running attempts accrue, decayed as ended ones are", () => {
  const HALF = 3600;
  it.each([
    ["not started yet", 2, 1000, 0, 0],
    ["no time run", 2, 0, 0, 0],
    ["one second, 1 cpu: about 1", 1, 0, 1000, 1],
    ["a minute, 4 cpus: a little under 240", 4, 0, 60_000, ((4 * HALF) / Math.LN2) * (1 - 2 ** (-60 / HALF))],
    // ∫0..h 2^(-t/h) dt = h / (2 ln 2)
    ["one half-life, 1 cpu", 1, 0, HALF * 1000, HALF / (2 * Math.LN2)],
    // ∫0..2h = 3h / (4 ln 2)
    ["two half-lives, 2 cpus", 2, 0, 2 * HALF * 1000, (2 * 3 * HALF) / (4 * Math.LN2)],
  ])("%s", (_, cpus, startedAt, now, expected) => {
    expect(runningUsage(cpus, startedAt, now, HALF)).toBeCloseTo(expected, 2);
  });

  it("adds ended attempts decayed to now and running ones", () => {
    const record = {
      cpuSeconds: 100,
      at: 0,
      running: [
        { cpus: 1, startedAt: HALF * 1000 - 10_000 },
        { cpus: 2, startedAt: HALF * 1000 - 5000 },
      ],
    };
    // 100 a half-life ago is 50; about 10 + 2 * 5 running.
    expect(usageAt(record, HALF * 1000, HALF)).toBeCloseTo(70, 1);
  });

  it("never grows past cpus * h / ln 2, however long it runs", () => {
    expect(runningUsage(1, 0, 1000 * HALF * 1000, HALF)).toBeCloseTo(HALF / Math.LN2, 6);
  });
});

const TREE = parseSharesFile(`
accounts:
  physics: {shares: 3, users: {alice: 1, bob: 1}}
  biology: {shares: 1, users: {carol: 1}}
`);

/** Each user's factor, and each node's level factor, by name. */
function figures(root: ShareNode): Record<string, { level: number; factor: number | null }> {
  const out: Record<string, { level: number; factor: number | null }> = {};
  const walk = (node: ShareNode) => {
    for (const child of node.children) {
      out[child.name] = { level: child.levelFactor, factor: child.factor };
      walk(child);
    }
  };
  walk(root);
  return out;
}

describe("shareTreeOf: level factors, and users ranked as Fair Tree ranks them", () => {
  it("ranks the under-served account's users first, then within each account", () => {
    // physics: s .75, u .5; biology: s .25, u .5. In physics: alice u .75, bob u .25, s .5 each.
    const root = shareTreeOf(
      TREE,
      new Map([
        ["alice", 30],
        ["bob", 10],
        ["carol", 40],
      ]),
    );
    const got = figures(root);
    expect(got.physics.level).toBeCloseTo(2 ** (-0.5 / 0.75), 12);
    expect(got.biology.level).toBeCloseTo(2 ** (-0.5 / 0.25), 12);
    expect(got.alice.level).toBeCloseTo(2 ** -1.5, 12);
    expect(got.bob.level).toBeCloseTo(2 ** -0.5, 12);
    expect([got.bob.factor, got.alice.factor, got.carol.factor]).toStrictEqual([1, 2 / 3, 1 / 3]);
    expect(got.physics.factor).toBeNull();
    // The tree comes ranked: physics before biology, bob before alice.
    expect(root.children.map((each) => each.name)).toStrictEqual(["physics", "biology"]);
    expect(root.children[0].children.map((each) => each.name)).toStrictEqual(["bob", "alice"]);
    const alice = root.children[0].children[1];
    expect(alice.normShares).toBeCloseTo(0.375, 12);
    expect(alice.normUsage).toBeCloseTo(0.375, 12);
    expect(root.usage).toBe(80);
  });

  it.each<[string, Record<string, number>, Record<string, number>]>([
    ["nobody used anything: every user is first", {}, { alice: 1, bob: 1, carol: 1 }],
    [
      "an over-served account's best user still comes after the under-served account's",
      { alice: 70, bob: 1, carol: 10, dave: 10 },
      { carol: 1, dave: 1, bob: 2 / 4, alice: 1 / 4 },
    ],
    [
      "a newcomer (no usage) comes first whatever its account used",
      { alice: 10, bob: 10, carol: 80, dave: 0 },
      { dave: 1, alice: 3 / 4, bob: 3 / 4, carol: 1 / 4 },
    ],
    [
      "accounts at their shares exactly: the users' own standing decides",
      { alice: 45, bob: 15, carol: 20 },
      { dave: 1, bob: 3 / 4, alice: 2 / 4, carol: 1 / 4 },
    ],
  ])("%s", (_, usage, expected) => {
    const tree = parseSharesFile(`
accounts:
  physics: {shares: 3, users: {alice: 1, bob: 1}}
  biology: {shares: 1, users: {carol: 1, dave: 1}}
`);
    const factors = Object.fromEntries(
      [...fairShareFactors(tree, records(usage), 0, DAY)].filter(([user]) => user in expected),
    );
    for (const [user, factor] of Object.entries(expected))
      expect(factors[user], user).toBeCloseTo(factor, 12);
  });

  it.each<[string, Record<string, number>, Record<string, [number, number, number]>]>([
    [
      "nobody used anything: no usage anywhere, every level factor 1",
      {},
      {
        root: [0, 0, 1],
        physics: [0, 0, 1],
        alice: [0, 0, 1],
        bob: [0, 0, 1],
        biology: [0, 0, 1],
        carol: [0, 0, 1],
      },
    ],
    [
      "only carol used anything: alice and bob, whose siblings used nothing either, have usage 0 among them, not 0/0",
      { carol: 40 },
      {
        root: [1, 1, 1],
        physics: [0, 0, 1],
        alice: [0, 0, 1],
        bob: [0, 0, 1],
        // s .25, u 1; under it s 1, u 1.
        biology: [1, 1, 2 ** -4],
        carol: [1, 1, 0.5],
      },
    ],
  ])(
    "each line's usage of the whole, usage among its siblings and level factor: %s",
    (_, usage, expected) => {
      const got = Object.fromEntries(
        shareLines(shareTreeOf(TREE, new Map(Object.entries(usage)))).map((line) => [
          line.name,
          [line.normUsage, line.levelUsage, line.levelFactor],
        ]),
      );
      expect(Object.keys(got)).toStrictEqual(Object.keys(expected));
      for (const [name, figures] of Object.entries(expected))
        for (const [at, figure] of figures.entries())
          expect(got[name][at], `${name} ${at}`).toBeCloseTo(figure, 12);
    },
  );

  it("ranks a user beside a sub-account of the same level factor before that account's users, not with them", () => {
    // In physics, alice and theory each have s .5 and u .5 (f .5); dave under theory has f .5 too.
    const tree = parseSharesFile(`
accounts:
  physics:
    shares: 1
    users: {alice: 1}
    accounts:
      theory: {shares: 1, users: {dave: 1}}
`);
    const factors = fairShareFactors(tree, records({ alice: 10, dave: 10 }), 0, DAY);
    expect(Object.fromEntries(factors)).toStrictEqual({ alice: 1, dave: 1 / 2 });
  });

  it("puts users the file names nowhere in name order among equals, whatever order their usage came in", () => {
    const root = shareTreeOf(
      FLAT_SHARE_TREE,
      new Map([
        ["zoe", 10],
        ["adam", 10],
        ["mia", 10],
      ]),
    );
    expect(root.children.map((each) => each.name)).toStrictEqual(["adam", "mia", "zoe"]);
  });

  it("puts a user the file names nowhere under the root with one share, or under its group's account", () => {
    const usage = new Map([
      ["alice", 10],
      ["eve", 10],
      ["zoe", 10],
    ]);
    const groups: Record<string, string> = { eve: "biology", zoe: "no-such-account" };
    const root = shareTreeOf(TREE, usage, (user) => groups[user]);
    const biology = root.children.find((each) => each.name === "biology")!;
    expect(biology.children.map((each) => each.name).sort()).toStrictEqual(["carol", "eve"]);
    const zoe = root.children.find((each) => each.name === "zoe")!;
    expect(zoe.kind).toBe("user");
    // Under the root beside physics (3) and biology (1).
    expect(zoe.levelShares).toBeCloseTo(1 / 5, 12);
  });

  it("without a shares file every user is a leaf of one share under the root: the least used goes first", () => {
    const factors = fairShareFactors(FLAT_SHARE_TREE, records({ alice: 30, bob: 10, carol: 10 }), 0, DAY);
    expect(Object.fromEntries(factors)).toStrictEqual({ bob: 1, carol: 1, alice: 1 / 3 });
  });

  it("decays usage with the half-life it is given before ranking", () => {
    // alice used 100 two half-lives ago (25 now), bob 40 now: alice goes first.
    const usages = new Map([
      ["alice", { cpuSeconds: 100, at: 0, running: [] }],
      ["bob", { cpuSeconds: 40, at: 2 * DAY * 1000, running: [] }],
    ]);
    expect(Object.fromEntries(fairShareFactors(FLAT_SHARE_TREE, usages, 2 * DAY * 1000, DAY))).toStrictEqual({
      alice: 1,
      bob: 0.5,
    });
    // With a 7-day half-life, alice's 100 is still about 82: bob goes first.
    expect(
      Object.fromEntries(fairShareFactors(FLAT_SHARE_TREE, usages, 2 * DAY * 1000, 7 * DAY)),
    ).toStrictEqual({ alice: 0.5, bob: 1 });
  });
});

describe("shareLines: what a user sees", () => {
  const root = shareTreeOf(
    TREE,
    new Map([
      ["alice", 30],
      ["bob", 10],
      ["carol", 40],
    ]),
  );

  it("an admin or reader sees every line, the root first, in rank order", () => {
    expect(shareLines(root).map((line) => `${"  ".repeat(line.depth)}${line.name}`)).toStrictEqual([
      "root",
      "  physics",
      "    bob",
      "    alice",
      "  biology",
      "    carol",
    ]);
  });

  it("says of each line whether it is an account or a user", () => {
    // Built here, not as the tests are collected, so that a mutation run breaking how the tree is built reaches it.
    const own = shareTreeOf(TREE, new Map([["carol", 40]]));
    expect(shareLines(own).map((line) => [line.name, line.kind])).toStrictEqual([
      ["root", "account"],
      ["physics", "account"],
      ["alice", "user"],
      ["bob", "user"],
      ["biology", "account"],
      ["carol", "user"],
    ]);
  });

  it("a user sees their own line and the accounts above it", () => {
    expect(shareLines(root, "alice").map((line) => [line.name, line.parent, line.depth])).toStrictEqual([
      ["root", null, 0],
      ["physics", "root", 1],
      ["alice", "physics", 2],
    ]);
  });

  it("a user the tree does not hold sees nothing of anyone else's", () => {
    expect(shareLines(root, "mallory")).toStrictEqual([]);
  });

  it("a user named as an account is not shown that account, only their own line", () => {
    expect(shareLines(root, "biology")).toStrictEqual([]);
  });
});

describe("compareOwnerShares: the factor first, then cpus running, then usage", () => {
  const share = (factor: number | undefined, runningCpus: number, recentCpuSeconds: number) => ({
    runningCpus,
    recentCpuSeconds,
    ...(factor === undefined ? {} : { factor }),
  });
  it.each([
    ["a higher factor goes first, whatever runs", share(1, 8, 500), share(0.5, 0, 0), -1],
    ["a lower factor goes after", share(0.25, 0, 0), share(0.5, 4, 100), 1],
    ["no factor reads as 1", share(undefined, 2, 0), share(0.9, 0, 0), -1],
    ["equal factors: fewer cpus running first", share(0.5, 1, 100), share(0.5, 2, 0), -1],
    ["equal in all: submit order decides", share(0.5, 1, 10), share(0.5, 1, 10), 0],
  ])("%s", (_, a, b, sign) => {
    expect(Math.sign(compareOwnerShares(a, b))).toBe(sign);
  });
});

describe("OwnerUsage with a shares tree", () => {
  it("running attempts accrue usage from their start and stop accruing at their end", () => {
    const usage = new OwnerUsage({ tree: TREE, halfLifeSeconds: 7 * DAY });
    usage.started("alice", 2, "j1/0/1", 0);
    usage.started("carol", 1, "j2/0/1", 0);
    const early = usage.shares(10_000);
    expect(early.get("alice")?.recentCpuSeconds).toBeCloseTo(20, 3);
    expect(early.get("carol")?.recentCpuSeconds).toBeCloseTo(10, 3);
    // bob is named and used nothing: factor 1.
    expect(early.get("bob")).toStrictEqual({ runningCpus: 0, recentCpuSeconds: 0, factor: 1 });
    usage.stopped("alice", 2, "j1/0/1");
    usage.used("alice", 5, 10_000);
    // Her measured 5 cpu-seconds replace the 20 the attempt accrued; nothing accrues after.
    expect(usage.share("alice", 60_000).recentCpuSeconds).toBeCloseTo(5, 3);
    expect(usage.share("alice", 60_000).runningCpus).toBe(0);
  });

  it("its running usage, kept as two sums, agrees with usageAt over the attempts one by one", () => {
    // A seeded walk of starts and stops over 60 days with a one-hour half-life (the sums rebase).
    let seed = 7;
    const random = () => {
      seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
      return seed / 2 ** 31;
    };
    const HALF = 3600;
    const usage = new OwnerUsage({ halfLifeSeconds: HALF });
    const live = new Map<string, { cpus: number; startedAt: number }>();
    let now = 0;
    /** Since when some attempt has run without a break, and the longest such stretch (the sums rebase past 500 half-lives). */
    let busySince: number | null = null;
    let longestBusy = 0;
    for (let step = 0; step < 2000; step++) {
      now += Math.floor(random() * 4_000_000);
      if (busySince !== null) longestBusy = Math.max(longestBusy, now - busySince);
      if (live.size > 0 && random() < 0.45) {
        const key = [...live.keys()][Math.floor(random() * live.size)];
        usage.stopped("alice", live.get(key)!.cpus, key);
        live.delete(key);
        if (live.size === 0) busySince = null;
      } else {
        busySince ??= now;
        const cpus = 1 + Math.floor(random() * 4);
        const key = `a${step}`;
        usage.started("alice", cpus, key, now);
        live.set(key, { cpus, startedAt: now });
      }
      const later = now + Math.floor(random() * 7_200_000);
      const expected = usageAt({ cpuSeconds: 0, at: 0, running: live.values() }, later, HALF);
      const got = usage.share("alice", later).recentCpuSeconds;
      expect(Math.abs(got - expected), `step ${step}`).toBeLessThan(1e-6 * Math.max(1, expected));
    }
    expect(longestBusy / 1000 / HALF).toBeGreaterThan(600);
  });

  it("decays ended usage with its own half-life", () => {
    const usage = new OwnerUsage({ halfLifeSeconds: 3600 });
    usage.used("alice", 80, 0);
    expect(usage.share("alice", 3 * 3_600_000).recentCpuSeconds).toBeCloseTo(10, 9);
  });

  it("its tree holds a user asked about who used nothing", () => {
    const usage = new OwnerUsage({ tree: TREE });
    usage.used("alice", 10, 0);
    const lines = shareLines(usage.tree(0, ["erin"]), "erin");
    expect(lines.map((line) => [line.name, line.factor])).toStrictEqual([
      ["root", null],
      ["erin", 1],
    ]);
  });
});

describe("recovery rebuilds the usage with the server's tree and half-life", () => {
  const t0 = 1_700_000_000_000;
  const twoCpus = validateJobSpec({ command: "burn", resources: { cpus: 2 } });
  const snapshot = () => ({
    jobs: [
      jobRecord("done", { owner: "alice", state: "succeeded" as const, spec: twoCpus, endedAt: t0 }),
      jobRecord("live", { owner: "carol", state: "running" as const, spec: twoCpus }),
    ],
    tasks: [
      taskRecord("done", 0, { state: "succeeded", attempts: 1 }),
      taskRecord("live", 0, { state: "running", attempts: 1 }),
    ],
    attempts: [
      // Ended at t0, 100 cpu-seconds measured.
      attemptRecord("done", 0, 1, {
        state: "ended",
        outcome: "succeeded",
        startedAt: t0 - 100_000,
        endedAt: t0,
        usage: { wallSeconds: 100, userSeconds: 100, systemSeconds: 0, peakMemoryMb: 5 },
      }),
      // Running on 2 cpus since t0.
      attemptRecord("live", 0, 1, { state: "running", startedAt: t0 }),
    ],
    hosts: [],
    tokens: [],
    meta: {},
    checkpointParts: [],
  });

  it("decays ended attempts with the half-life given, and live ones accrue from their start", () => {
    const now = t0 + 3_600_000;
    const state = recoverState(snapshot(), now, { tree: TREE, halfLifeSeconds: 3600 });
    const shares = state.owners.shares(now);
    // 100 an hour (one half-life) ago: 50.
    expect(shares.get("alice")?.recentCpuSeconds).toBeCloseTo(50, 6);
    // 2 cpus for an hour, each second decayed: 2 * 3600 / (2 ln 2).
    expect(shares.get("carol")?.recentCpuSeconds).toBeCloseTo(3600 / Math.LN2, 3);
    expect(shares.get("carol")?.runningCpus).toBe(2);
    // bob (named, nothing used) first; then physics (u .5 of s .75) before biology (u .5 of s .25).
    expect(shares.get("bob")?.factor).toBe(1);
    expect(shares.get("alice")?.factor).toBeGreaterThan(shares.get("carol")?.factor ?? 1);
  });

  it("gives the same standing as the state it was recovered from", () => {
    const now = t0 + 60_000;
    const first = recoverState(snapshot(), t0, { tree: TREE });
    const again = recoverState(snapshot(), now, { tree: TREE });
    expect(again.owners.shares(now)).toStrictEqual(first.owners.shares(now));
  });
});

function records(usage: Record<string, number>) {
  return new Map(
    Object.entries(usage).map(([user, cpuSeconds]) => [user, { cpuSeconds, at: 0, running: [] }]),
  );
}

import { describe, expect, it } from "vitest";
import { compileExpression } from "../../src/common/model/cel.ts";
import { failingClauses, requirementClauses, whyClauseFails } from "../../src/common/model/cel-clauses.ts";
import type { HostFacts } from "../../src/common/model/records.ts";

function host(overrides: Partial<HostFacts> = {}): HostFacts {
  return {
    name: "s1",
    pool: "local",
    os: "linux",
    arch: "x86_64",
    cpus: 4,
    memoryMb: 8192,
    memFreeMb: 8000,
    load1: 0.5,
    cpuFree: 0.75,
    diskFreeMb: 10_000,
    speed: 2,
    labels: { tier: "gold" },
    slotsFree: 3,
    ...overrides,
  };
}

describe("requirementClauses", () => {
  it.each([
    ['host.arch == "x86_64"', ['host.arch == "x86_64"']],
    ['  ( host.arch == "x86_64" )  ', ['host.arch == "x86_64"']],
    ['host.arch == "x86_64" && host.memFreeMb >= 1e9', ['host.arch == "x86_64"', "host.memFreeMb >= 1e9"]],
    [
      '(host.arch == "x86_64" && (host.memFreeMb >= 1e9)) && host.labels.zone == "a"',
      ['host.arch == "x86_64"', "host.memFreeMb >= 1e9", 'host.labels.zone == "a"'],
    ],
    [
      'host.os == "linux" && (host.arch == "arm64" || (host.name == "s1"))',
      ['host.os == "linux"', 'host.arch == "arm64" || (host.name == "s1")'],
    ],
    [
      'host.arch == "a" || host.arch == "b" && host.os == "linux"',
      ['host.arch == "a" || host.arch == "b" && host.os == "linux"'],
    ],
    [
      '!(host.arch == "a" && host.os == "b") && host.cpus > 1.0',
      ['!(host.arch == "a" && host.os == "b")', "host.cpus > 1.0"],
    ],
    [
      "host.memFreeMb > (1.0) && (host.memFreeMb) < 2.0",
      ["host.memFreeMb > (1.0)", "(host.memFreeMb) < 2.0"],
    ],
    ['host.name == "(" && host.os == ")"', ['host.name == "("', 'host.os == ")"']],
    [
      'host.labels["zone-x"] == "a" && has(host.labels.rack)',
      ['host.labels["zone-x"] == "a"', "has(host.labels.rack)"],
    ],
  ] as const)("splits %s", (source, clauses) => {
    expect(requirementClauses(compileExpression(source)).map((clause) => clause.source)).toEqual(clauses);
  });

  it("keeps the split with the compiled expression", () => {
    const expression = compileExpression('host.arch == "x86_64" && host.cpus > 1.0');
    expect(requirementClauses(expression)).toBe(requirementClauses(expression));
  });

  it("lists the host facts a clause reads, each once", () => {
    const [clause] = requirementClauses(
      compileExpression(
        'host.memFreeMb > host.memoryMb / 2.0 || host.labels.zone == "a" || host.memFreeMb > 1.0',
      ),
    );
    expect(clause.reads).toEqual([{ fact: "memFreeMb" }, { fact: "memoryMb" }, { label: "zone" }]);
  });
});

describe("failingClauses", () => {
  it.each([
    [
      "the false clause, with the value it read",
      'host.arch == "x86_64" && host.memFreeMb >= 1e9',
      {},
      ["host.memFreeMb >= 1e9 is false (host.memFreeMb = 8000)"],
    ],
    [
      "each false clause through nested parentheses",
      '(host.arch == "arm64" && (host.memFreeMb >= 1e9)) && host.os == "linux"',
      {},
      [
        'host.arch == "arm64" is false (host.arch = "x86_64")',
        "host.memFreeMb >= 1e9 is false (host.memFreeMb = 8000)",
      ],
    ],
    [
      "an || as one clause",
      'host.os == "linux" && (host.arch == "arm64" || host.name == "s2")',
      {},
      ['host.arch == "arm64" || host.name == "s2" is false (host.arch = "x86_64", host.name = "s1")'],
    ],
    [
      "a missing label as such",
      'host.os == "linux" && host.labels.zone == "a"',
      {},
      ['host.labels.zone == "a" cannot be evaluated: host has no label "zone"'],
    ],
    [
      "a label that is there but differs",
      'host.labels.tier == "silver"',
      {},
      ['host.labels.tier == "silver" is false (host.labels.tier = "gold")'],
    ],
    [
      "a label that needs brackets",
      'host.labels["zone-x"] == "a"',
      { labels: { "zone-x": "b" } },
      ['host.labels["zone-x"] == "a" is false (host.labels["zone-x"] = "b")'],
    ],
    [
      "a label missing under has()",
      "has(host.labels.rack)",
      {},
      ["has(host.labels.rack) is false (host.labels.rack is missing)"],
    ],
    ["nothing when all hold", 'host.arch == "x86_64" && host.memFreeMb >= 512.0', {}, []],
    ["nothing when the only clause holds", "host.cpus >= 4.0", {}, []],
    ["a clause with no host fact, without values", "host.cpus >= 4.0 && 1 == 2", {}, ["1 == 2 is false"]],
    [
      "numbers as they are",
      "host.load1 < 0.25 && host.cpus >= 2.0",
      { load1: 1.75 },
      ["host.load1 < 0.25 is false (host.load1 = 1.75)"],
    ],
  ] as const)("names %s", (_case, source, overrides, expected) => {
    const facts = host(overrides);
    const failing = failingClauses(compileExpression(source), facts);
    expect(failing.map((outcome) => `${outcome.clause.source} ${whyClauseFails(outcome, facts)}`)).toEqual(
      expected,
    );
  });

  it("agrees with the whole expression on every host", () => {
    const expression = compileExpression(
      'host.arch == "x86_64" && (host.memFreeMb >= 4096.0 || host.cpus > 8.0)',
    );
    for (const facts of [
      host(),
      host({ memFreeMb: 100 }),
      host({ arch: "arm64" }),
      host({ cpus: 16, memFreeMb: 1 }),
    ]) {
      expect(failingClauses(expression, facts).length === 0).toBe(expression(facts) === true);
    }
  });
});

import { describe, expect, it } from "vitest";
import { type CompiledExpression, compileExpression } from "../../../../src/common/model/cel.ts";
import {
  evaluateClause,
  failingClauses,
  requirementClauses,
  whyClauseFails,
} from "../../../../src/common/model/cel-clauses.ts";
import type { HostFacts } from "../../../../src/common/model/host-facts.ts";

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
    // Quotes hide parentheses, an escaped quote does not end a string.
    ["host.name == 'a\\'(' && host.os == \"x\"", ["host.name == 'a\\'('", 'host.os == "x"']],
    ['host.name == "a\\"(" && host.os == ")"', ['host.name == "a\\"("', 'host.os == ")"']],
    ["host.name == ')' + (\"(\") && true", ["host.name == ')' + (\"(\")", "true"]],
    // Parentheses at the edges of a clause, however many and however spaced, are kept when they belong to it.
    ["(((host.cpus))) > 1.0 && ((2.0)) > host.cpus", ["(((host.cpus))) > 1.0", "((2.0)) > host.cpus"]],
    ['true && (host.name)  == "x"', ["true", '(host.name)  == "x"']],
    ["host.cpus > ( 1.0 ) && ( 2.0 ) > host.cpus", ["host.cpus > ( 1.0 )", "( 2.0 ) > host.cpus"]],
    ["(host).cpus > 1.0 && -(1.0) < host.cpus", ["(host).cpus > 1.0", "-(1.0) < host.cpus"]],
    ["(true && false) && (false)", ["true", "false", "false"]],
    // A triple-quoted string hides its quotes from the cut: the clause is printed back from its tree.
    ['host.name == """a"b(""" && true', ['host.name == "a\\"b("', "true"]],
    ['("""x"(""" + host.name) == "a" && true', ['"x\\"(" + host.name == "a"', "true"]],
    // A comment is not part of a clause.
    ["host.cpus > 1.0 // more than one\n && (true // always\n)", ["host.cpus > 1.0", "true"]],
  ] as const)("splits %s", (source, clauses) => {
    expect(requirementClauses(compileExpression(source)).map((clause) => clause.source)).toEqual(clauses);
  });

  it("a single clause is the expression itself", () => {
    const expression = compileExpression('host.cpus > 2.0 || host.os == "x"');
    const [clause, ...others] = requirementClauses(expression);
    expect(others).toEqual([]);
    expect(clause.evaluate).toBe(expression);
    expect(clause.reads).toEqual([{ fact: "cpus" }, { fact: "os" }]);
  });

  it.each([
    ["named by its text", Object.assign(() => false, { source: "host.cpus > 9.0" }), "host.cpus > 9.0"],
    ["without a text, as the requirements", () => false, "requirements"],
  ])("an expression without its syntax tree is one clause, %s", (_case, expression, source) => {
    const clauses = requirementClauses(expression as CompiledExpression);
    expect(clauses).toEqual([{ source, evaluate: expression, reads: [] }]);
  });

  it.each([
    ["a fact", "host.cpus > 1.0", [{ fact: "cpus" }]],
    ["a label by name", 'host.labels.zone == "a"', [{ label: "zone" }]],
    ["a label in brackets", 'host.labels["zone-x"] == "a"', [{ label: "zone-x" }]],
    [
      "a label named as a fact, and the fact",
      "host.labels.name == host.name",
      [{ label: "name" }, { fact: "name" }],
    ],
    [
      "a fact named as a label, and the label",
      "host.name == host.labels.name",
      [{ fact: "name" }, { label: "name" }],
    ],
    [
      "the labels as a whole when the key is not a text",
      'host.labels[host.os] == "x"',
      [{ fact: "labels" }, { fact: "os" }],
    ],
    [
      "the labels as a whole when the key is a name",
      'host.labels.exists(k, host.labels[k] == "x")',
      [{ fact: "labels" }],
    ],
    ["the labels as a whole when the key is a number", 'host.labels[1] == "x"', [{ fact: "labels" }]],
    ["beside a null", "dyn(host.name) != null", [{ fact: "name" }]],
    [
      "inside a list and a call",
      "[host.labels.zone].exists(z, z.startsWith(host.arch))",
      [{ label: "zone" }, { fact: "arch" }],
    ],
    [
      "inside a choice",
      'host.cpus > 1.0 ? host.labels.a == "x" : host.labels.b == "y"',
      [{ fact: "cpus" }, { label: "a" }, { label: "b" }],
    ],
    ["inside a map", '{"k": host.labels.a}["k"] == host.pool', [{ label: "a" }, { fact: "pool" }]],
    ["not a field of another name", "cel.bind(h, {'cpus': 1.0}, h.cpus > 0.0)", []],
    ["each once", 'host.labels.a == host.labels.a || host.labels.a != ""', [{ label: "a" }]],
  ] as const)("lists %s among the facts a clause reads", (_case, source, reads) => {
    expect(requirementClauses(compileExpression(source)).flatMap((clause) => clause.reads)).toEqual(reads);
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
    [
      "every label missing",
      'host.labels.a == host.labels.b && host.labels["c"] == "x"',
      {},
      [
        'host.labels.a == host.labels.b cannot be evaluated: host has no labels "a", "b"',
        'host.labels["c"] == "x" cannot be evaluated: host has no label "c"',
      ],
    ],
    [
      "another error as it is, with a label that is there",
      'host.labels.tier == "gold" && host.labels[host.os] == "x"',
      {},
      ['host.labels[host.os] == "x" cannot be evaluated: No such key: linux'],
    ],
    [
      "a label that is there and another missing, naming the missing one",
      "host.labels.tier == host.labels.zone",
      {},
      ['host.labels.tier == host.labels.zone cannot be evaluated: host has no label "zone"'],
    ],
    [
      "a fact left unset",
      "has(host.secondsLeft) && host.cpus > 1.0",
      {},
      ["has(host.secondsLeft) is false (host.secondsLeft = unset)"],
    ],
    [
      "a boolean fact",
      "host.enforces && host.cpus > 1.0",
      { enforces: false },
      ["host.enforces is false (host.enforces = false)"],
    ],
    [
      "a value that is not a boolean",
      "dyn(host.cpus) && true",
      {},
      ["dyn(host.cpus) is 4, not true (host.cpus = 4)"],
    ],
    [
      "a text that is not a boolean",
      "dyn(host.name) && true",
      {},
      ['dyn(host.name) is "s1", not true (host.name = "s1")'],
    ],
    ["an int that is not a boolean", "dyn(7) && true", {}, ["dyn(7) is 7, not true"]],
    ["a list that is not a boolean", "dyn([1.5]) && true", {}, ["dyn([1.5]) is [1.5], not true"]],
    [
      "labels by name where a name will do, in brackets elsewhere",
      'host.labels["1a"] == "x" || host.labels._b == "y" || host.labels["c d"] == "z" || host.labels.e1 == "w"',
      { labels: { "1a": "", _b: "", "c d": "", e1: "" } },
      [
        'host.labels["1a"] == "x" || host.labels._b == "y" || host.labels["c d"] == "z" || host.labels.e1 == "w" is false (host.labels["1a"] = "", host.labels._b = "", host.labels["c d"] = "", host.labels.e1 = "")',
      ],
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

  it("a clause that holds says so", () => {
    const [clause] = requirementClauses(compileExpression("host.cpus >= 4.0"));
    const outcome = evaluateClause(clause, host());
    expect(outcome).toEqual({ clause, holds: true });
    expect(whyClauseFails(outcome, host())).toBe("holds");
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

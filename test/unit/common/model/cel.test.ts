import { afterEach, describe, expect, it, vi } from "vitest";
import {
  checkExpression,
  compileExpression,
  evaluateRank,
  evaluateRequirement,
  expressionProblem,
  HOST_FACT_NAMES,
  warmUpExpressions,
} from "../../../../src/common/model/cel.ts";
import { EVALUATION_MAX_MS } from "../../../../src/common/model/cel-guard.ts";
import type { HostFacts } from "../../../../src/common/model/host-facts.ts";

const list = (n: number) => `[${Array.from({ length: n }, (_, i) => i).join(", ")}]`;

afterEach(() => {
  vi.restoreAllMocks();
});

function host(overrides: Partial<HostFacts> = {}): HostFacts {
  return {
    name: "s1",
    pool: "local",
    os: "linux",
    arch: "x86_64",
    cpus: 4,
    memoryMb: 8192,
    memFreeMb: 4096,
    load1: 0.5,
    cpuFree: 0.75,
    diskFreeMb: 10_000,
    speed: 2,
    labels: { tier: "gold" },
    slotsFree: 3,
    ...overrides,
  };
}

describe("HOST_FACT_NAMES", () => {
  it("declares the documented host facts", () => {
    expect([...HOST_FACT_NAMES].sort()).toEqual(
      [
        "name",
        "pool",
        "os",
        "arch",
        "cpus",
        "memoryMb",
        "memFreeMb",
        "load1",
        "cpuFree",
        "diskFreeMb",
        "speed",
        "labels",
        "slotsFree",
        "secondsLeft",
        "enforces",
        "shared",
      ].sort(),
    );
  });
});

describe("checkExpression", () => {
  it.each([
    ["requirements", 'host.arch == "x86_64" && host.memFreeMb >= 512'],
    ["requirements", 'host.labels.tier == "gold"'],
    ["requirements", 'host.os == "linux" || host.pool == "hpc"'],
    ["requirements", 'host.labels["tier"] == "gold"'],
    ["requirements", "host.diskFreeMb > 100.0 && host.load1 < 2.0"],
    ["rank", "host.speed * host.cpuFree"],
    ["rank", 'host.name == "s2" ? 10 : 1'],
    ["rank", "host.speed * host.cpus"],
    ["rank", "host.memFreeMb / 1024.0"],
    ["rank", "1.5"],
    ["rank", "7"],
    ["rank", "10u"],
    ["rank", "dyn(host.name)"],
    ["requirements", "dyn(host.cpus)"],
    ["requirements", "host.enforces"],
    ["requirements", "host.secondsLeft > 60.0 && host.slotsFree >= 1.0"],
    ["requirements", '"/data" in host.shared'],
    ["requirements", 'host.shared.exists(folder, folder.startsWith("/data"))'],
    ["rank", "double(size(host.shared))"],
  ] as const)("accepts %s %s", (purpose, source) => {
    expect(checkExpression(source, purpose)).toBeNull();
  });

  it.each([
    ["requirements", "host.cpus >", /Unexpected token/],
    ["requirements", "", /Unexpected token/],
    ["requirements", "host.gpus > 0", /gpus/],
    ["rank", "host.gpus", /gpus/],
    ["requirements", "host.cpus", /^must be a boolean expression, but it is double$/],
    ["requirements", "host.name", /^must be a boolean expression, but it is string$/],
    ["rank", "host.name", /^must be a number, but it is string$/],
    ["rank", "host.cpus > 2.0", /^must be a number, but it is bool$/],
    ["rank", "host.labels", /^must be a number, but it is map/],
    ["rank", "host.speed * 2", /overload/],
    ["requirements", "cpus > 1.0", /cpus/],
    ["requirements", "host.enforces == 1.0", /no such overload: bool == double/],
    ["requirements", 'host.shared == "/data"', /no such overload/],
  ] as const)("rejects %s %j", (purpose, source, problem) => {
    const message = checkExpression(source, purpose);
    expect(message).not.toBeNull();
    expect(message).toMatch(problem);
    expect(message).not.toContain("\n");
  });

  it.each([
    ["a syntax error is a CEL problem", "host.cpus >", "requirements", "cel"],
    ["a type error is a CEL problem", "host.gpus > 0", "requirements", "cel"],
    ["the wrong type for the purpose is a CEL problem", "host.name", "rank", "cel"],
    [
      "an expression over the budget is a cost problem",
      `${list(400)}.exists(a, ${list(400)}.exists(b, a < b))`,
      "requirements",
      "cost",
    ],
    // The cost comes first: a long expression over the budget is not type-checked as well.
    [
      "over the budget and ill-typed is a cost problem",
      `${list(400)}.exists(a, ${list(400)}.exists(b, a < host.gpus))`,
      "requirements",
      "cost",
    ],
  ] as const)("%s", (_rule, source, purpose, kind) => {
    expect(expressionProblem(source, purpose)).toEqual({ kind, message: expect.any(String) });
  });

  it.each([
    ["requirements", "host.name", "must be a boolean expression, but it is string"],
    ["rank", "host.cpus > 1.0", "must be a number, but it is bool"],
    ["rank", "host.speed", null],
    ["requirements", "host.memFreeMb", "must be a boolean expression, but it is double"],
  ] as const)(
    "an expression compiled before it is checked keeps its type: %s %s",
    (purpose, source, problem) => {
      // In parentheses: a text no other test uses (the text is the key of the expressions kept).
      const text = `(${source})`;
      compileExpression(text);
      expect(checkExpression(text, purpose)).toBe(problem);
      expect(checkExpression(text, purpose)).toBe(problem);
    },
  );
});

describe("evaluateRequirement", () => {
  it.each([
    ['host.arch == "x86_64" && host.memFreeMb >= 512', {}, true],
    ['host.arch == "x86_64" && host.memFreeMb >= 512', { memFreeMb: 100 }, false],
    ['host.arch == "x86_64" && host.memFreeMb >= 512', { arch: "aarch64" }, false],
    ['host.labels.tier == "gold"', {}, true],
    ['host.labels.tier == "gold"', { labels: { tier: "silver" } }, false],
    ['host.name == "s2"', { name: "s2" }, true],
    ["host.slotsFree >= 2.0", { slotsFree: 1 }, false],
    ['"/data" in host.shared', { shared: ["/scratch", "/data"] as string[] }, true],
    ['"/data" in host.shared', { shared: [] as string[] }, false],
  ] as const)("%s on %j -> %s", (source, overrides, ok) => {
    const result = evaluateRequirement(compileExpression(source), host(overrides));
    if (ok) {
      expect(result).toEqual({ ok: true });
    } else {
      expect(result).toEqual({ ok: false, reason: "requirements are false on this host" });
    }
  });

  it("a missing label key is no match, with a reason naming the key", () => {
    const result = evaluateRequirement(compileExpression('host.labels.zone == "a"'), host());
    expect(result.ok).toBe(false);
    if (result.ok) return;
    expect(result.reason).toMatch(/^requirements cannot be evaluated: /);
    expect(result.reason).toContain("zone");
  });

  it("the same compiled expression matches a host that has the label", () => {
    const expression = compileExpression('host.labels.zone == "a"');
    expect(evaluateRequirement(expression, host({ labels: { zone: "a" } }))).toEqual({ ok: true });
    expect(evaluateRequirement(expression, host({ labels: {} })).ok).toBe(false);
  });

  it("a non-boolean value is no match", () => {
    expect(evaluateRequirement(compileExpression("host.cpus"), host()).ok).toBe(false);
    expect(evaluateRequirement(() => "true", host()).ok).toBe(false);
  });

  it.each([
    ["the first line only", new Error("boom\nsecond line"), "boom"],
    ["without the spaces around it", new Error("  boom  \nsecond line"), "boom"],
    ["a thrown string as it is", "boom", "boom"],
    ["a thrown null as null", null, "null"],
    ["a thrown object without a message as an object", { code: 1 }, "[object Object]"],
  ])("an expression that throws is no match, with the error's %s", (_case, thrown, reason) => {
    const result = evaluateRequirement(() => {
      throw thrown;
    }, host());
    expect(result).toEqual({ ok: false, reason: `requirements cannot be evaluated: ${reason}` });
  });

  it.each([
    ["a type error, with it", "host.gpus > 0", /^requirements cannot be evaluated: .*gpus/],
    [
      "over the budget, with the estimate",
      `${list(400)}.exists(a, ${list(400)}.exists(b, a < b))`,
      /^requirements cannot be evaluated: estimated cost \d+ steps is over the limit of 100000$/,
    ],
    [
      "ill-typed and over the budget, with the type error",
      `${list(400)}.exists(a, ${list(400)}.exists(b, a < host.gpus))`,
      /^requirements cannot be evaluated: .*gpus/,
    ],
  ])("a compiled expression that is %s is never a match", (_case, source, reason) => {
    const expression = compileExpression(source);
    expect(evaluateRequirement(expression, host())).toEqual({
      ok: false,
      reason: expect.stringMatching(reason),
    });
  });

  it("an expression that runs out of time fails that evaluation only", () => {
    // A clock 10 ms later at each read: the second read (after 512 steps) is past the deadline.
    let now = 0;
    const clock = vi.spyOn(performance, "now").mockImplementation(() => (now += 10));
    const expression = compileExpression(`${list(300)}.exists(a, a < 0 && host.cpus > 0.0)`);
    expect(evaluateRequirement(expression, host())).toEqual({
      ok: false,
      reason: `requirements cannot be evaluated: evaluation stopped at the limit of ${EVALUATION_MAX_MS} ms`,
    });
    // The same expression, on a clock that stands still, is evaluated again.
    clock.mockImplementation(() => now);
    expect(evaluateRequirement(expression, host())).toEqual({
      ok: false,
      reason: "requirements are false on this host",
    });
  });

  it("an expression that throws is no match", () => {
    const result = evaluateRequirement(() => {
      throw new Error("boom\nsecond line");
    }, host());
    expect(result).toEqual({ ok: false, reason: "requirements cannot be evaluated: boom" });
  });
});

describe("evaluateRank", () => {
  it.each([
    ["host.speed * host.cpuFree", {}, 1.5],
    ["host.speed * host.cpuFree", { speed: 10, cpuFree: 0.5 }, 5],
    ['host.name == "s2" ? 10 : 1', { name: "s2" }, 10],
    ['host.name == "s2" ? 10 : 1', { name: "s1" }, 1],
    ["-3", {}, -3],
    ["host.memFreeMb / 1024.0", { memFreeMb: 2048 }, 2],
    ["host.labels.tier == 'gold' ? 2.5 : 0.5", {}, 2.5],
  ] as const)("%s on %j -> %s", (source, overrides, expected) => {
    const value = evaluateRank(compileExpression(source), host(overrides));
    expect(typeof value).toBe("number");
    expect(value).toBe(expected);
  });

  it("turns an int (BigInt) result into a number", () => {
    const expression = compileExpression('host.name == "s2" ? 10 : 1');
    expect(typeof expression(host({ name: "s2" }))).toBe("bigint");
    expect(evaluateRank(expression, host({ name: "s2" }))).toBe(10);
  });

  it.each([
    ["a missing label", 'host.labels.zone == "a" ? 1.0 : 2.0'],
    ["a string", "host.name"],
    ["a boolean", "host.cpus > 1.0"],
    ["NaN", "0.0 / 0.0"],
    ["infinity", "1.0 / 0.0"],
    ["null", "dyn(null)"],
    ["a list", "dyn([1.0])"],
  ])("ranks lowest on %s", (_, source) => {
    expect(evaluateRank(compileExpression(source), host())).toBe(Number.NEGATIVE_INFINITY);
  });

  it("ranks lowest when the expression throws", () => {
    const throwing = () => {
      throw new Error("no");
    };
    expect(evaluateRank(throwing, host())).toBe(Number.NEGATIVE_INFINITY);
  });

  it("a uint rank, accepted at submit, evaluates to its number", () => {
    const source = 'host.name == "s2" ? 10u : 1u';
    expect(checkExpression(source, "rank")).toBeNull();
    expect(evaluateRank(compileExpression(source), host({ name: "s2" }))).toBe(10);
  });
});

describe("compileExpression", () => {
  it("compiles once and evaluates against each host", () => {
    const expression = compileExpression("host.cpus * 2.0");
    expect(expression(host({ cpus: 3 }))).toBe(6);
    expect(expression(host({ cpus: 8 }))).toBe(16);
  });

  it("throws on a syntax error", () => {
    expect(() => compileExpression("host.cpus >")).toThrow();
  });

  it.each([
    ["ill-typed", "(host.gpus > 0)", /gpus/],
    [
      "over the budget",
      `(${list(400)}.exists(a, ${list(400)}.exists(b, a < b)))`,
      /^estimated cost \d+ steps/,
    ],
  ])("an expression compiled though %s is still refused when checked", (_case, source, problem) => {
    compileExpression(source);
    expect(checkExpression(source, "requirements")).toMatch(problem);
  });

  it("shares the tree of the same text, checked or compiled, with its text", () => {
    const source = "host.cpus * 3.0";
    const compiled = compileExpression(source);
    expect(compiled.source).toBe(source);
    expect(checkExpression(source, "rank")).toBeNull();
    expect(compileExpression(source).ast).toBe(compiled.ast);
    const checked = "host.cpus * 4.0";
    expect(checkExpression(checked, "rank")).toBeNull();
    const first = compileExpression(checked);
    expect(first(host({ cpus: 2 }))).toBe(8);
    expect(compileExpression(checked).ast).toBe(first.ast);
  });

  it("keeps the last 256 texts, the oldest going first", () => {
    const text = (name: string, i: number) => `host.name == "${name}${i}"`;
    // 256 others first: all kept before are gone.
    for (let i = 0; i < 256; i++) expect(checkExpression(text("before", i), "requirements")).toBeNull();
    const kept = compileExpression('host.name == "kept"');
    for (let i = 0; i < 255; i++) expect(checkExpression(text("after", i), "requirements")).toBeNull();
    expect(compileExpression('host.name == "kept"').ast).toBe(kept.ast);
    expect(checkExpression(text("after", 255), "requirements")).toBeNull();
    expect(compileExpression('host.name == "kept"').ast).not.toBe(kept.ast);
  });

  it("guards an expression compiled after it was checked", () => {
    // Under the budget; over the size limit at evaluation on a host with a long name.
    const source =
      "cel.bind(b, host.name + host.name + host.name + host.name, cel.bind(c, b + b + b + b + b + b + b + b, c.size() > 1))";
    expect(checkExpression(source, "requirements")).toBeNull();
    expect(evaluateRequirement(compileExpression(source), host({ name: "n".repeat(4000) }))).toEqual({
      ok: false,
      reason: expect.stringMatching(/a value of 112000 characters is over the limit of 100000/),
    });
  });
});

describe("warmUpExpressions", () => {
  it("runs the parser, the check and an evaluation without error", () => {
    expect(() => warmUpExpressions(host())).not.toThrow();
  });
});

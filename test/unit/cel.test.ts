import { describe, expect, it } from "vitest";
import {
  checkExpression,
  compileExpression,
  evaluateRank,
  evaluateRequirement,
  HOST_FACT_NAMES,
} from "../../src/common/model/cel.ts";
import type { HostFacts } from "../../src/common/model/records.ts";

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
  ] as const)("rejects %s %j", (purpose, source, problem) => {
    const message = checkExpression(source, purpose);
    expect(message).not.toBeNull();
    expect(message).toMatch(problem);
    expect(message).not.toContain("\n");
  });
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
});

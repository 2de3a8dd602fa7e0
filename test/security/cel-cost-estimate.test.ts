// The estimate of a requirements or rank expression's cost (issue 22, item 4): what the repository's
// tests and examples use is far under the budget; nested comprehensions over big literal lists
// (10^6 and 10^9 steps a host) and their kin are over it, and are refused at submit with the
// estimated cost and the limit.

import { Environment } from "@marcbachmann/cel-js";
import { describe, expect, it } from "vitest";
import { checkExpression } from "../../src/common/model/cel.ts";
import { CEL_COST_BUDGET, estimateCost } from "../../src/common/model/cel-cost.ts";
import { validateJobSpec } from "../../src/common/model/job-spec.ts";

const parser = new Environment({ homogeneousAggregateLiterals: false });
const cost = (source: string) => estimateCost(parser.parse(source).ast);
const list = (n: number) => `[${Array.from({ length: n }, (_, i) => i).join(", ")}]`;
const L = list(1000);

describe("the cost estimate", () => {
  // Every requirements and rank expression in test/ and examples/ (and the README's).
  it.each([
    'host.arch == "x86_64" && host.memFreeMb >= 512.0',
    'host.arch == "x86_64" && host.memFreeMb >= 1e9',
    'host.arch == "aarch64"',
    "host.memoryMb > 1e12",
    'host.labels.gpu == "yes"',
    'host.labels.tier == "gold"',
    'host.labels["tier"] == "gold"',
    'host.labels.zone == "a"',
    'host.name != "b"',
    'host.name == "nowhere"',
    'host.os == "linux"',
    'host.os == "linux" || host.pool == "hpc"',
    'host.os == "darwin" || host.labels.tier == "gold"',
    'host.pool == "cloud"',
    "host.diskFreeMb > 100.0 && host.load1 < 2.0",
    'host.arch == "x86_64" && host.cpus > 1.0',
    "host.speed",
    "host.speed * host.cpuFree",
    "host.speed * host.cpus",
    "host.memFreeMb / 1024.0",
    "host.cpus * 2.0",
    "1.5",
    "7",
    'host.name == "s2" ? 10 : 1',
    "host.labels.zone == 'a' ? 1.0 : 0.0",
    'host.labels.tier == "gold" ? 1.0 : 0.0',
    // Heavier ones a user might write, still well under.
    'host.labels.exists(k, k.startsWith("gpu"))',
    'host.labels.all(k, host.labels[k] != "")',
    'host.name.matches("^node-[0-9]+$") && host.labels.zone in ["a", "b", "c"]',
    '["a", "b", "c"].exists(z, host.labels.zone == z)',
    'host.name.split("-").size() > 1',
  ])("%s is under the budget", (source) => {
    expect(cost(source)).toBeLessThanOrEqual(CEL_COST_BUDGET);
  });

  it.each([
    ["two comprehensions over 1000-element lists (10^6)", `${L}.exists(a, ${L}.exists(b, a + b < 0))`, 1e6],
    ["three (10^9)", `${L}.exists(a, ${L}.exists(b, ${L}.exists(c, a + b + c < 0)))`, 1e9],
    [
      "three over one list bound once",
      `cel.bind(l, ${L}, l.exists(a, l.exists(b, l.exists(c, a + b + c < 0))))`,
      1e9,
    ],
    ["all and exists_one", `${L}.all(a, ${L}.exists_one(b, a == b))`, 1e6],
    ["map of filter", `${L}.map(a, ${L}.filter(b, a < b).size()).size() > 0`, 1e6],
    ["a comprehension over a mapped list", `${L}.map(a, ${L}).exists(l, l.exists(b, b < 0))`, 1e6],
    [
      "a comprehension over a host's labels in one over a big list",
      `${L}.exists(a, host.labels.exists(k, size(k) == a))`,
      6.4e4,
    ],
    [
      "a list doubled by binding",
      `cel.bind(a, ${L}, cel.bind(b, a + a, cel.bind(c, b + b, cel.bind(d, c + c, cel.bind(e, d + d, cel.bind(f, e + e, cel.bind(g, f + f, g.size() > 0)))))))`,
      1.2e5,
    ],
    [
      "a string repeated by concatenation in a comprehension",
      `${L}.map(a, "${"x".repeat(200)}").join().size() > 0`,
      2e5,
    ],
    [
      "a comparison of nested lists",
      `cel.bind(l, ${L}, [l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l, l].map(m, m == l).size() > 0)`,
      1e5,
    ],
    [
      "a rank of nested comprehensions",
      `double(${L}.map(a, ${L}.map(b, ${L}.filter(c, a + b + c < 0).size())).size())`,
      1e9,
    ],
  ])("%s is over the budget", (_name, source, atLeast) => {
    const estimated = cost(source);
    expect(estimated).toBeGreaterThan(CEL_COST_BUDGET);
    expect(estimated).toBeGreaterThanOrEqual(atLeast);
  });

  it("refuses an expression over the budget at submit, naming the estimated cost and the limit", () => {
    const source = `${L}.exists(a, ${L}.exists(b, ${L}.exists(c, a + b + c < 0)))`;
    expect(() => validateJobSpec({ command: "true", requirements: source })).toThrow(
      /^requirements: estimated cost \d+ steps is over the limit of 100000$/,
    );
    expect(() =>
      validateJobSpec({ command: "true", rank: `double(${L}.map(a, ${L}.size()).size())` }),
    ).toThrow(/^rank: estimated cost \d+ steps is over the limit of 100000$/);
    // What the requirements file is checked with.
    expect(checkExpression(source, "requirements")).toMatch(
      /^estimated cost \d+ steps is over the limit of 100000$/,
    );
    expect(checkExpression('host.labels.zone == "a"', "requirements")).toBeNull();
  });
});

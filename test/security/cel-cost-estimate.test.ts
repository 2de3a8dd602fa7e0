// The estimate of a requirements or rank expression's cost (issue 22, item 4): what the repository's
// tests and examples use is far under the budget; nested comprehensions over big literal lists
// (10^6 and 10^9 steps a host) and their kin are over it, and are refused at submit with the
// estimated cost and the limit.

import { type ASTNode, Environment } from "@marcbachmann/cel-js";
import { describe, expect, it } from "vitest";
import { checkExpression } from "../../src/common/model/cel.ts";
import { CEL_COST_BUDGET, estimateCost } from "../../src/common/model/cel-cost.ts";
import { validateJobSpec } from "../../src/common/model/job-spec.ts";

const parser = new Environment({ homogeneousAggregateLiterals: false });
const cost = (source: string) => estimateCost(parser.parse(source).ast);
/** With `x.?y` and `x[?0]`, which the scheduler's environment does not enable. */
const optionalParser = new Environment({ homogeneousAggregateLiterals: false, enableOptionalTypes: true });
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

  it("accepts an expression estimated at the budget itself, and refuses one a step over", () => {
    // 2 + 1001 + 1000 x (3 + 3 + 92), and 1 + 3 + 993 for the second clause: 100,000 steps.
    const at = (extra: number) =>
      `${L}.exists(x, "${"a".repeat(92)}".contains("")) && "${"a".repeat(993 + extra)}".contains("")`;
    expect(cost(at(0))).toBe(CEL_COST_BUDGET);
    expect(checkExpression(at(0), "requirements")).toBeNull();
    expect(checkExpression(at(1), "requirements")).toBe(
      "estimated cost 100001 steps is over the limit of 100000",
    );
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

// Exact costs of small expressions, one rule each: a mutant that changes how a kind of node is
// counted changes one of these. `+ ""` (the size of a string or list is added to a concatenation's
// cost) shows the size the estimate gives a value; an unbound name such as `x` is as big as a fact
// string (256), and a host's labels are 64 of them. Ill-typed ones are estimated all the same: the
// estimate comes before the type check.
describe("the steps of each kind of node", () => {
  it.each([
    // Nodes and names.
    ["a literal is a step", "1", 1],
    ["a name is a step", "x", 1],
    ["a host fact is two steps, whatever its name", "host.cpus", 2],
    ["a field of another value is its value and a step", "x.y", 2],
    ["a field of a field", "x.y.z", 3],
    ["an index is its value, the index and a step", "x[0]", 3],
    ["a list is its elements and a step", "[1, 2]", 3],
    ["a map is its keys and values and a step", '{"a": 1}', 3],
    ["a logical operator is its operands and a step", "true && false || true", 5],
    ["a choice is its three operands and a step", "true ? 1 : 2", 4],
    ["a negation is its operand and a step", "-1", 2],
    ["a not is its operand and a step", "!true", 2],
    ["another binary operator is its operands and a step", "1 % 2", 3],
    // The size of values (shown through a concatenation, which copies its operands).
    ["a string literal is as long as its text", '"abc" + ""', 6],
    ["a bytes literal is as long as its bytes", 'b"abcd" + b""', 1 + 1 + 1 + 4],
    [
      "a concatenation with an empty list keeps the other's elements",
      '(["ab"] + []) == []',
      1 + (1 + 2 + 1 + 1) + 1 + 1 * (1 + 2) + 1,
    ],
    [
      "a string fact is 256 characters",
      "host.name + host.os + host.pool + host.arch",
      4 * 2 + 3 + 512 + 768 + 1024,
    ],
    ["another fact is a scalar", "host.cpus + host.speed", 5],
    ["a label is a fact string", "host.labels.k + host.labels.j", 3 + 3 + 1 + 512],
    ["an unbound name is a fact string", 'x + ""', 3 + 256],
    ["a field of an unbound name is a fact string", 'x.y + ""', 4 + 256],
    ["a list's element is its elements' largest", '["a", "bc"][0] + ""', 3 + 1 + 1 + 1 + 1 + 2],
    [
      "a map's element is its keys' and values' largest",
      '{"ab": "cde"}.exists(k, k + "")',
      2 + 3 + 1 * (3 + 3 + 3),
    ],
    ["a choice is as big as its bigger branch", '(true ? "ab" : "abcd") + ""', 1 + 4 + 1 + 4],
    ["a choice is as big as its bigger branch, either way", '(true ? "abcd" : "ab") + ""', 1 + 4 + 1 + 4],
    ["a negation is a scalar", '-x + ""', 4],
    ["a not is a scalar", '!x + ""', 4],
    ["a logical operator is a scalar", '(true && x) + ""', 5],
    ["an arithmetic operator is a scalar", '(x * 2) + ""', 5],
    ["a comparison is a scalar", '(x == 2) + ""', 5 + 256 + 1],
    ["an ordering is a scalar", '(1 < 2) + ""', 5],
    ["a membership is a scalar", '(1 in [1]) + ""', 1 + 1 + 1 * 2 + 2 + 2 + 1 + 1],
    // What operators go through.
    ["a concatenation copies both operands", '"a" + "bc"', 3 + 3],
    ["a concatenation of lists copies their elements", "[1] + [2, 3]", 1 + 2 + 3 + 3],
    [
      "a concatenation of lists of lists keeps the bigger element",
      '([["a"]] + [["bcd"]]) == []',
      1 + (1 + 3 + 3 + 2) + 1 + 2 * (1 + 1 * (1 + 3)) + 1,
    ],
    ["a comparison goes through both operands' elements", "[1, 2] == [3]", 1 + 3 + 2 + 2 * 2 + 1 * 2],
    ["and all the way down", '[["a"], ["bc", "d"]] == []', 1 + (1 + 2 + 3) + 1 + 2 * (1 + 2 * (1 + 2)) + 1],
    ["a comparison of strings goes through their characters", '"ab" != "abc"', 3 + 2 + 3],
    [
      "a comparison of maps goes through their entries",
      '{"a": ["bc"]} == {}',
      1 + 4 + 1 + 1 * (1 + 1 * (1 + 2)) + 1,
    ],
    [
      "a membership compares the value with each element",
      '"ab" in ["ab", "c"]',
      1 + 1 + 3 + 2 * (1 + 2) + 2 * 3,
    ],
    ["a membership of lists compares them deep", "[1, 2] in [[1]]", 1 + 3 + 3 + 1 * (1 + 4) + 1 * (1 + 2)],
    ["an ordering of strings goes through both", '"ab" < "abc"', 3 + 5],
    ["as does <=", '"ab" <= "abc"', 8],
    ["as does >", '"ab" > "abc"', 8],
    ["as does >=", '"ab" >= "abc"', 8],
    // Comprehensions: their range's size times the steps of an iteration (3 and the body).
    [
      "a comprehension is 2 steps, its range and each iteration",
      "[1, 2].exists(x, x > 0)",
      2 + 3 + 2 * (3 + 3),
    ],
    ["exists_one counts as exists", "[1, 2].exists_one(x, x > 0)", 17],
    ["all counts as exists", "[1, 2].all(x, x > 0)", 17],
    ["map counts as exists", "[1, 2].map(x, x + 1)", 17],
    ["filter counts as exists", "[1, 2].filter(x, x > 0)", 17],
    ["a map with a filter counts both", "[1, 2].map(x, x > 0, x)", 2 + 3 + 2 * (3 + 3 + 1)],
    ["a comprehension over a map goes through its keys", '{"a": 1, "b": 2}.exists(k, true)', 2 + 5 + 2 * 4],
    [
      "over a host's labels, 64 of them",
      "host.labels.exists(k, k.size() > 1)",
      2 + 2 + 64 * (3 + 1 + 1 + 1 + 1),
    ],
    [
      "over an unbound name, as many as a fact string",
      'x.exists(y, y + "")',
      2 + 1 + 256 * (3 + 1 + 1 + 1 + 256),
    ],
    [
      "the variable is an element of the range",
      '[["ab"]].exists(l, l.exists(s, s + ""))',
      2 + 3 + 1 * (3 + 2 + 1 + 1 * (3 + 1 + 1 + 1 + 2)),
    ],
    ["a quantifier is a scalar", '[1, 2].exists(x, true) + ""', 1 + 11 + 1 + 0 + 0 + 2],
    [
      "a map is a list of its body's values",
      '[1, 2].map(x, "ab").exists(s, s + "")',
      2 + 13 + 2 * (3 + 3 + 2),
    ],
    [
      "a filter is a list of the range's elements",
      '["abc"].filter(x, true).exists(s, s + "")',
      2 + 8 + 1 * (3 + 3 + 3),
    ],
    [
      "a map over a host's labels is 64 elements",
      "host.labels.map(k, k).exists(k, true)",
      2 + (2 + 2 + 64 * 4) + 64 * 4,
    ],
    // Binding: the value once, its name as big as the value in the body.
    ["a binding is the value, the body and a step", "cel.bind(x, 1, x)", 3],
    ["a bound name is as big as its value", 'cel.bind(x, "abc", x) + ""', 1 + 3 + 1 + 3],
    ["a bind not on cel is another method", "x.bind(y, 1, y)", 1 + 1 + 3 + 256 + 256],
    ["a bind on a field named cel is another method", "x.cel.bind(a, 1, a)", 1 + 2 + 3 + 256 + 256],
    ["a bind with four arguments is another method", "cel.bind(x, 1, x, 2)", 1 + 1 + 4 + 256 + 256],
    ["another method of cel is another method", "cel.other(a, 1, a)", 1 + 1 + 3 + 256 + 256],
    ["a bind on a text is another method", '"cel".bind(a, 1, a)', 1 + 1 + 3 + 3 + 256],
    ["a function named bind is another function", "bind(a, 1, a)", 1 + 3 + 256],
    ["a function named all is another function", "all([1], x)", 1 + 2 + 1 + 1 + 256],
    ["a function named exists is another function", "exists(x, true)", 1 + 2 + 256],
    // Functions: a step and their operands, and the work each does.
    ["has() is its operand and a step", "has(x.y)", 3],
    ["has() without an operand is a step", "has()", 1],
    ["a function without operands is a step", "foo()", 1],
    ["the host itself is a fact string", 'host + ""', 1 + 1 + 1 + 256],
    [
      "size() and type() do no work and are scalars",
      'size("abc") + type("abc").size() + ""',
      1 + (1 + 2 + (1 + 2)) + 1,
    ],
    ["a method of that name too", '"abc".size() + ""', 4],
    ["dyn() is its operand as it is", 'dyn("abc") + ""', 1 + 2 + 1 + 3],
    ["dyn() is its operand as it is, compared", 'dyn("abcd") == dyn("abcd")', 1 + 2 * 2 + 2 * 4],
    ["startsWith goes through its argument", '"abc".startsWith("de")', 3 + 2],
    ["as does endsWith", 'host.name.endsWith("de")', 1 + 2 + 1 + 2],
    ["an argument of unknown size is a fact string", '"ab".startsWith(x)', 3 + 256],
    ["contains is the product of both sizes", '"abc".contains("de")', 3 + 6],
    ["indexOf too", '"abc".indexOf("de")', 9],
    ["lastIndexOf too", '"abc".lastIndexOf("de")', 9],
    ["matches too", '"abc".matches("de")', 9],
    ["an empty operand counts as one", '"".contains("")', 3 + 1],
    ["an empty pattern counts as one", '"abc".matches("")', 3 + 3],
    ["lowerAscii goes through its string and is as long", '"abc".lowerAscii() + ""', 1 + 5 + 1 + 3],
    ["upperAscii too", '"abc".upperAscii() + ""', 10],
    ["trim too", '"abc".trim() + ""', 10],
    ["substring too", '"abc".substring(1) + ""', 1 + 6 + 1 + 3],
    [
      "split goes through its string, into one more part than characters",
      '"abc".split(",").exists(s, s + "")',
      2 + 6 + 4 * (3 + 1 + 1 + 1 + 3),
    ],
    [
      "join goes through its list and makes each element and separator",
      '["ab", "c"].join("--") + ""',
      1 + 19 + 1 + 8,
    ],
    [
      "a join of elements of unknown size counts fact strings",
      'x.join("") + ""',
      1 + (1 + 1 + 1 + 256 + 256 * 256) + 1 + 256 * 256,
    ],
    ["string() goes through its operand and is at least 32 characters", 'string("abc") + ""', 1 + 5 + 1 + 32],
    ["and as long as its operand", 'string(x) + ""', 1 + 258 + 1 + 256],
    [
      "bytes() goes through its string and is up to four bytes a character",
      'bytes("abc") + b""',
      1 + 5 + 1 + 12,
    ],
    ["a conversion goes through its operand", 'int("12")', 2 + 2],
    ["another function goes through its two operands", 'foo("ab", "abc")', 3 + 5],
    ["another method goes through its receiver and argument", 'x.foo("ab")', 3 + 258],
  ] as const)("%s: %s costs %d", (_rule, source, steps) => {
    expect(cost(source)).toBe(steps);
  });

  it.each([
    ["an optional field is a field", "x.?y + x.?y.z", 1 + 2 + 3 + 512],
    ["an optional field of the host is a fact", 'host.?name + ""', 1 + 2 + 1 + 256],
    ["an optional index is an index", 'x[?0] + ""', 1 + 3 + 1 + 256],
  ] as const)("%s: %s costs %d", (_rule, source, steps) => {
    expect(estimateCost(optionalParser.parse(source).ast)).toBe(steps);
  });

  it("counts each node of an operator it does not know, with the sizes of its operands", () => {
    // What a newer parser might produce: three operands, one of them in an object.
    const [a, b, c] = ['"abc"', "1", "x"].map((source) => parser.parse(source).ast);
    const unknown = { op: "future", args: [a, { nested: b }, [c]] } as unknown as ASTNode;
    // 1 + (1 + 3) + (1 + 256): the object's node is not one of its operands.
    expect(estimateCost(unknown)).toBe(1 + 4 + 257);
    const concatenated = { op: "+", args: [unknown, parser.parse('""').ast] } as unknown as ASTNode;
    // As big as its biggest operand.
    expect(estimateCost(concatenated)).toBe(1 + 262 + 1 + 256);
    const nothing = { op: "future", args: "text" } as unknown as ASTNode;
    expect(estimateCost(nothing)).toBe(1);
    expect(estimateCost({ op: "future", args: null } as unknown as ASTNode)).toBe(1);
  });
});

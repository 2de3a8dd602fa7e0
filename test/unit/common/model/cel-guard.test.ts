// The guard's rules one by one, each at its edge: the step limit and the clock, what stops once the
// guard tripped, which nodes it wraps, and how values and calls are measured. The guard against
// expressions built to hold the event loop is tested in test/security/cel-guard.test.ts.

import { Environment } from "@marcbachmann/cel-js";
import { describe, expect, it } from "vitest";
import {
  EVALUATION_MAX_STEPS,
  EvaluationLimitError,
  guardTree,
  runGuarded,
} from "../../../../src/common/model/cel-guard.ts";

const environment = new Environment({ homogeneousAggregateLiterals: false })
  .registerVariable({
    name: "host",
    schema: { name: "string", labels: "map<string, string>", speed: "double" },
  })
  .registerVariable("xs", "list<int>");
const HOST = { name: "h1", labels: { zone: "a" }, speed: 1 };
/** `n` CEL ints (bigints), for `xs`. */
const ints = (n: number) => Array.from({ length: n }, (_, i) => BigInt(i));
const L = `[${Array.from({ length: 1000 }, (_, i) => i).join(", ")}]`;
/** Over the step limit: two loops of 1000 within each other. */
const OVER_STEPS = `${L}.exists(a, ${L}.exists(b, a + b < 0))`;
const STOPPED_AT_STEPS = `stopped: evaluation stopped at the limit of ${EVALUATION_MAX_STEPS} steps`;

/** A checked and guarded expression. */
function guardedExpression(source: string) {
  const evaluate = environment.parse(source);
  expect(evaluate.check().valid).toBe(true);
  guardTree(evaluate.ast);
  return evaluate;
}

/** Its value under the guard, or the message of the error it threw; a clock that never moves by default. */
function outcome(source: string, variables: Record<string, unknown> = {}, clock = () => 0): unknown {
  const evaluate = guardedExpression(source);
  try {
    return runGuarded(() => evaluate({ host: HOST, ...variables }), clock);
  } catch (error) {
    return error instanceof EvaluationLimitError ? `stopped: ${error.message}` : `error: ${error}`;
  }
}

describe("EvaluationLimitError", () => {
  it.each([
    ["out of steps or size unless told", () => new EvaluationLimitError("m"), false],
    ["out of time when told", () => new EvaluationLimitError("m", true), true],
  ])("is %s", (_case, make, outOfTime) => {
    const error = make();
    expect(error).toBeInstanceOf(Error);
    expect(error.name).toBe("EvaluationLimitError");
    expect(error.message).toBe("m");
    expect(error.outOfTime).toBe(outOfTime);
  });
});

describe("the step limit and the clock", () => {
  // `xs.map(x, x)` takes two steps an element: the step of the loop is a push and the name.
  it.each([
    ["exactly the limit of steps, which is allowed", 50_000, 50_000n],
    ["one element over it", 50_001, STOPPED_AT_STEPS],
  ])("a map of %s", (_case, length, expected) => {
    expect(outcome("xs.map(x, x).size()", { xs: ints(length) })).toEqual(expected);
  });

  // `xs.map(x, [1].map(y, y))` takes 11 an element: the 9 nodes of the inner map, each counted once
  // though the tree holds some twice (as the call's operands and in the loop it expands to), and the
  // inner loop's one iteration of 2.
  it.each([
    ["under the limit", 9090, 9090n],
    ["one element more, over it", 9091, STOPPED_AT_STEPS],
  ])("a loop in a loop counts each node of its body once: %s", (_case, length, expected) => {
    expect(outcome("xs.map(x, [1].map(y, y)).size()", { xs: ints(length) })).toEqual(expected);
  });

  it.each([
    [127, 0],
    [128, 1],
    [256, 2],
  ])("a map of %i elements reads the clock %i times: at 256 steps and each 256 more", (length, reads) => {
    let read = 0;
    const clock = () => {
      read++;
      return 0;
    };
    expect(outcome("xs.map(x, x).size()", { xs: ints(length) }, clock)).toBe(BigInt(length));
    expect(read).toBe(reads);
  });
});

describe("once the guard tripped", () => {
  it.each([
    ["all, which goes on through errors", `xs.all(x, ${L}.all(a, ${L}.all(b, a + b >= 0)))`],
    ["exists, which goes on through errors", `xs.exists(x, ${OVER_STEPS})`],
  ])("the loop of %s takes no element after the one it tripped in", (_case, source) => {
    let taken = 0;
    const xs = new Proxy(ints(1000), {
      get(target, key, receiver) {
        if (typeof key === "string" && /^\d+$/.test(key)) taken++;
        return Reflect.get(target, key, receiver);
      },
    });
    expect(outcome(source, { xs })).toBe(STOPPED_AT_STEPS);
    expect(taken).toBe(1);
  });

  it("every node throws at once: what comes after reads nothing", () => {
    // The loops return false once stopped, and `||` goes on to its right side.
    let reads = 0;
    const host = { ...HOST };
    Object.defineProperty(host, "name", {
      enumerable: true,
      get() {
        reads++;
        return "h1";
      },
    });
    expect(outcome(`${OVER_STEPS} || host.name == "h1"`, { host })).toBe(STOPPED_AT_STEPS);
    expect(reads).toBe(0);
  });

  it("the first reason stands: a value over another limit after it is not what the stop says", () => {
    // The receiver of matches, evaluated after its pattern, is a choice whose condition tripped
    // the guard and returned (a quantifier goes on through errors): its string, of 11,000
    // characters, times the pattern's 12 is over the limit of a match too.
    const elevenThousand = Array(11)
      .fill(`"${"a".repeat(1000)}"`)
      .join(" + ");
    const receiver = `(${OVER_STEPS} ? "" : s)`;
    expect(outcome(`cel.bind(s, ${elevenThousand}, ${receiver}.matches("^a+b?c?d?e?$"))`)).toBe(
      STOPPED_AT_STEPS,
    );
  });
});

describe("which nodes the guard wraps", () => {
  /** The ops of the nodes of a tree whose `evaluate` was replaced (before any evaluation, only the guard's are). */
  function wrappedOps(source: string): string[] {
    const evaluate = guardedExpression(source);
    const ops: string[] = [];
    const seen = new Set<unknown>();
    const visit = (value: unknown): void => {
      if (value === null || typeof value !== "object" || seen.has(value)) return;
      seen.add(value);
      if (Array.isArray(value)) value.forEach(visit);
      else if ("op" in value && "meta" in value && "args" in value) {
        if (Object.hasOwn(value, "evaluate")) ops.push(String(value.op));
        visit(value.args);
        visit((value.meta as { alternate?: unknown }).alternate);
      } else if (Object.getPrototypeOf(value) === Object.prototype) Object.values(value).forEach(visit);
    };
    visit(evaluate.ast);
    return ops.sort();
  }

  it.each([
    [
      "the makers of long values, a measured call and its operands; not arithmetic, names or literals",
      'host.speed * 2.0 < 3.0 || host.name + "x" == "y"',
      ["+", ".", ".", "==", "value"],
    ],
    [
      "a loop's step, counted; not its body's nodes or the loop itself",
      "[1, 2].exists(x, x > 1)",
      ["?:", "list", "rcall"],
    ],
  ])("%s", (_case, source, ops) => {
    expect(wrappedOps(source)).toEqual(ops);
  });
});

describe("what the guard measures", () => {
  const TEN_THOUSAND = `"${"a".repeat(10_000)}"`;
  it.each([
    // A value's size: a string's, a list's or a Map's, not a field named size.
    [
      "a label named size, which is not the size of the labels",
      "host.labels.size",
      { size: "200000" },
      "200000",
    ],
    // Only matches is measured as matches.
    [
      "startsWith over 10,000 characters twice, which is not measured as matches",
      `cel.bind(s, ${TEN_THOUSAND}, s.startsWith(s))`,
      HOST.labels,
      true,
    ],
    ["endsWith of a backreference's text", '"a\\\\1".endsWith("\\\\1")', HOST.labels, true],
    // What the call refuses is left to it.
    [
      "a pattern that is not a string",
      '"a".matches(dyn(null))',
      HOST.labels,
      expect.stringMatching(/^error: .*found no matching overload for 'string\.matches\(null\)'/),
    ],
    [
      "a join of lists, which counts none of their elements",
      `cel.bind(l, ${L}, dyn([${Array(101).fill("l").join(", ")}]).join())`,
      HOST.labels,
      expect.stringMatching(/^error: .*found no matching overload for 'list\.join\(\)'/),
    ],
    // A comparison's elements, all the way down.
    ["a comparison of lists of null", "[null, null] == [null, null]", HOST.labels, true],
    [
      "a comparison of a Map of labels, counted into its elements",
      "host.labels != {}",
      new Map([["k", "x".repeat(100_000)]]),
      "stopped: a comparison over 100004 elements is over the limit of 100000",
    ],
    [
      "a comparison of a Map of 99,999 labels: with it, its size is the limit, and it is counted on into them",
      "host.labels != {}",
      new Map(ints(99_999).map((i) => [`k${i}`, "v"])),
      "stopped: a comparison over 100003 elements is over the limit of 100000",
    ],
    [
      "a comparison of an object of 99,999 labels, the same",
      "host.labels != {}",
      Object.fromEntries(ints(99_999).map((i) => [`k${i}`, "v"])),
      "stopped: a comparison over 100003 elements is over the limit of 100000",
    ],
  ])("%s", (_case, source, labels, expected) => {
    expect(outcome(source, { host: { ...HOST, labels } })).toEqual(expected);
  });

  it("a comparison of a list of 99,999: with it, its length is the limit, and it is counted on into it", () => {
    expect(outcome("xs != []", { xs: ints(99_999) })).toBe(
      "stopped: a comparison over 100002 elements is over the limit of 100000",
    );
  });
});

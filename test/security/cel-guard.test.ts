// The guard at evaluation (issue 22, item 4): even when the estimate at submit is wrong, or was
// never made (an expression stored by older code), no evaluation of a requirements or rank
// expression holds the event loop for long, and a host it blows up on does not match. The trees
// here are guarded without the estimate, as if it had let them through.

import { Environment } from "@marcbachmann/cel-js";
import { describe, expect, it } from "vitest";
import {
  checkExpression,
  compileExpression,
  evaluateRank,
  evaluateRequirement,
} from "../../src/common/model/cel.ts";
import {
  EVALUATION_MAX_MS,
  EVALUATION_MAX_STEPS,
  EvaluationLimitError,
  guardTree,
  runGuarded,
} from "../../src/common/model/cel-guard.ts";
import { facts } from "../helpers/core-harness.ts";

const environment = new Environment({ homogeneousAggregateLiterals: false }).registerVariable({
  name: "host",
  schema: { name: "string", labels: "map<string, string>", speed: "double" },
});
const HOST = { name: "h1", labels: { zone: "a" }, speed: 1 };
const list = (n: number) => `[${Array.from({ length: n }, (_, i) => i).join(", ")}]`;
const L = list(1000);
const S = `"${"a".repeat(1000)}"`;
/** A string of 10,000 characters bound to `s` (ten of S). */
const bindS10 = (body: string) => `cel.bind(s, ${Array(10).fill(S).join(" + ")}, ${body})`;

/** Evaluates under the guard: the value or the error, and how long it took. */
function guarded(source: string): { value: unknown; ms: number } {
  const evaluate = environment.parse(source);
  expect(evaluate.check().valid).toBe(true);
  guardTree(evaluate.ast);
  const started = performance.now();
  let value: unknown;
  try {
    value = runGuarded(() => evaluate({ host: HOST }));
  } catch (error) {
    value = error;
  }
  return { value, ms: performance.now() - started };
}

describe("the guard at evaluation", () => {
  it.each([
    ["two comprehensions over 1000-element lists", `${L}.exists(a, ${L}.exists(b, a + b < 0))`, /limit of/],
    ["three", `${L}.exists(a, ${L}.exists(b, ${L}.exists(c, a + b + c < 0)))`, /limit of/],
    [
      "all, which goes on through errors",
      `${L}.all(a, ${L}.all(b, ${L}.all(c, a + b + c >= 0)))`,
      /limit of/,
    ],
    [
      "an || in the loop, which catches errors",
      `${L}.exists(a, ${L}.exists(b, (a + b < 0) || false))`,
      /limit of/,
    ],
    ["map", `${L}.map(a, ${L}.map(b, a + b)).size() > 0`, /limit of/],
    [
      "a list doubled by binding",
      `cel.bind(a, ${L}, cel.bind(b, a + a, cel.bind(c, b + b, cel.bind(d, c + c, cel.bind(e, d + d, cel.bind(f, e + e, cel.bind(g, f + f, cel.bind(h, g + g, h.size() > 0))))))))`,
      /a value of \d+ elements is over the limit of 100000/,
    ],
    [
      "a string doubled by binding",
      `cel.bind(a, ${S}, cel.bind(b, a + a + a + a + a + a + a + a, cel.bind(c, b + b + b + b + b + b + b + b, cel.bind(d, c + c + c + c + c + c + c + c, d.size() > 0))))`,
      /a value of \d+ characters is over the limit of 100000/,
    ],
    [
      "a join of a long string repeated",
      `cel.bind(s, ${S} + ${S} + ${S} + ${S} + ${S} + ${S} + ${S} + ${S} + ${S} + ${S}, ${L}.map(x, s).join().size() > 0)`,
      /a join over \d+ elements is over the limit of 100000/,
    ],
    [
      "a comparison of nested lists",
      `cel.bind(l, ${L}, cel.bind(m, ${L.replace(/\d+/g, "l")}, m == m))`,
      /a comparison over \d+ elements is over the limit of 100000/,
    ],
    ["a regular expression with a backreference", `("a" + ${S}).matches("^(a+)+\\\\1$")`, /backreference/],
  ])("stops %s", (_name, source, message) => {
    // The first evaluation runs code not yet optimised; the second is what a scheduling pass sees.
    guarded(source);
    let { value, ms } = guarded(source);
    // On a loaded machine the process may lose its core for longer than the guard's clock allows
    // (EVALUATION_MAX_MS), which then stops the evaluation first: another try, at most five more.
    for (let tries = 1; tries < 6 && value instanceof EvaluationLimitError && value.outOfTime; tries++)
      ({ value, ms } = guarded(source));
    expect(value).toBeInstanceOf(EvaluationLimitError);
    expect((value as Error).message).toMatch(message);
    // A few milliseconds on a quiet machine; the margin is for a busy one.
    expect(ms).toBeLessThan(200);
  });

  it.each([
    ["two comprehensions over 1000-element lists", `${L}.exists(a, ${L}.exists(b, a + b < 0))`],
    ["all, which goes on through errors", `${L}.all(a, ${L}.all(b, a + b >= 0))`],
    ["map", `${L}.map(a, ${L}.map(b, a + b)).size() > 0`],
  ])("stops %s at the step limit itself, with a clock that never moves", (_name, source) => {
    // The step limit holds apart from the clock: an expression over it is stopped for its steps,
    // not its time (which a later pass would try again), however fast the machine.
    const evaluate = environment.parse(source);
    guardTree(evaluate.ast);
    let value: unknown;
    try {
      value = runGuarded(
        () => evaluate({ host: HOST }),
        () => 0,
      );
    } catch (error) {
      value = error;
    }
    expect(value).toBeInstanceOf(EvaluationLimitError);
    expect((value as EvaluationLimitError).message).toBe(
      `evaluation stopped at the limit of ${EVALUATION_MAX_STEPS} steps`,
    );
    expect((value as EvaluationLimitError).outOfTime).toBe(false);
  });

  it("stops an evaluation that runs past its time, as out of time, on the clock it is given", () => {
    const evaluate = environment.parse(`${L}.exists(a, ${L}.exists(b, a + b < 0))`);
    guardTree(evaluate.ast);
    let now = 0;
    // Each read of the clock is a millisecond later than the one before.
    const clock = () => now++;
    let value: unknown;
    try {
      value = runGuarded(() => evaluate({ host: HOST }), clock);
    } catch (error) {
      value = error;
    }
    expect(value).toBeInstanceOf(EvaluationLimitError);
    expect((value as EvaluationLimitError).message).toBe(
      `evaluation stopped at the limit of ${EVALUATION_MAX_MS} ms`,
    );
    expect((value as EvaluationLimitError).outOfTime).toBe(true);
  });

  it("runs a regular expression that backtracks exponentially in linear time", () => {
    guarded(`(${S} + "!").matches("^(a+)+$")`);
    const { value, ms } = guarded(`(${S} + "!").matches("^(a+)+$")`);
    expect(value).toBe(false);
    expect(ms).toBeLessThan(200);
  });

  it.each([
    ["facts", 'host.labels.zone == "a" && host.speed >= 1.0'],
    ["a comprehension over the labels", 'host.labels.exists(k, k == "zone")'],
    ["a map", "[1, 2, 3].map(x, x * 2) == [2, 4, 6]"],
    ["a comprehension over 100 elements", `${list(100)}.exists(a, a == 99)`],
    ["a regular expression", 'host.name.matches("^h[0-9]$")'],
  ])("leaves an expression under the budget as it was: %s", (_name, source) => {
    // Code not yet optimised may run out of time the first time (compileExpression forgives that),
    // and a loaded machine may take the process off its core for longer than the guard's few
    // milliseconds: the expression must come out true within a few tries, which an expression the
    // guard itself refused never does.
    guarded(source);
    const values = [];
    for (let tries = 0; tries < 5; tries++) {
      const { value } = guarded(source);
      values.push(value);
      if (value === true) break;
    }
    expect(values).toContain(true);
  });

  it("a compiled expression that blows the guard does not match, and is not evaluated again", () => {
    // Over the budget: stored by older code, it is refused without being evaluated.
    const stored = compileExpression(`${L}.exists(a, ${L}.exists(b, a + b < 0))`);
    const host = facts("h1");
    const started = performance.now();
    expect(evaluateRequirement(stored, host)).toEqual({
      ok: false,
      reason: expect.stringMatching(
        /^requirements cannot be evaluated: estimated cost \d+ steps is over the limit of 100000$/,
      ),
    });
    expect(evaluateRank(stored, host)).toBe(Number.NEGATIVE_INFINITY);
    expect(performance.now() - started).toBeLessThan(200);
    // Under the budget and a value over the size limit at evaluation.
    const blows = compileExpression(
      `cel.bind(a, [${'"x", '.repeat(900)}"x"], cel.bind(b, a + a + a + a + a + a + a + a + a + a, cel.bind(c, b + b + b + b + b + b + b + b + b + b + b + b, c.size() > 0)))`,
    );
    const first = evaluateRequirement(blows, host);
    expect(first).toEqual({ ok: false, reason: expect.stringMatching(/over the limit of 100000/) });
    expect(evaluateRequirement(blows, host)).toEqual(first);
  });

  it("two jobs of one expression share its checked tree, not a refusal: one blown on a host leaves the other", () => {
    // Within the budget; over the size limit only where the host's name is long.
    const source =
      "cel.bind(b, host.name + host.name + host.name + host.name, cel.bind(c, b + b + b + b + b + b + b + b, c.size() > 0))";
    expect(checkExpression(source, "requirements")).toBeNull();
    const blown = compileExpression(source);
    const other = compileExpression(source);
    expect(evaluateRequirement(blown, { ...facts("h1"), name: "n".repeat(4000) })).toEqual({
      ok: false,
      reason: expect.stringMatching(/a value of 112000 characters is over the limit of 100000/),
    });
    expect(evaluateRequirement(other, facts("h1"))).toEqual({ ok: true });
    // The one blown stays refused, whatever the host.
    expect(evaluateRequirement(blown, facts("h1"))).toMatchObject({ ok: false });
  });
});

describe("what the guard measures", () => {
  /** The outcome of a guarded evaluation: its value, or the message of the error it threw. */
  function outcome(source: string, host: unknown = HOST): unknown {
    const evaluate = environment.parse(source);
    expect(evaluate.check().valid).toBe(true);
    guardTree(evaluate.ast);
    try {
      // A clock that never moves: what is measured is steps and sizes, not time.
      return runGuarded(
        () => evaluate({ host }),
        () => 0,
      );
    } catch (error) {
      return error instanceof EvaluationLimitError ? `stopped: ${error.message}` : `error: ${error}`;
    }
  }
  const ls = (n: number) => Array(n).fill("l").join(", ");

  it.each([
    // join: each element and each separator.
    [
      "a join of 10 x 10,000 characters and 10 separators of 2",
      bindS10(`[${ls(10).replace(/l/g, "s")}].join("--")`),
      "stopped: a join over 100020 elements is over the limit of 100000",
    ],
    [
      "a join without a separator",
      bindS10(`[${ls(11).replace(/l/g, "s")}].join()`),
      "stopped: a join over 110000 elements is over the limit of 100000",
    ],
    ["a join at the limit", bindS10(`[${ls(10).replace(/l/g, "s")}].join("").size()`), 100000n],
    // matches: the string's length times the pattern's.
    [
      "matches over 11,000 characters with a pattern of 12",
      `cel.bind(t, ${Array(11).fill(S).join(" + ")}, t.matches("^a+b?c?d?e?$"))`,
      "stopped: matches over 132000 elements is over the limit of 100000",
    ],
    ["matches at the limit", bindS10('s.matches("^a+b?c?de$")'), false],
    ["matches on an empty string", '"".matches("^$")', true],
    // RE2 has no backreferences or lookaround: refused whatever the size.
    [
      "a backreference",
      '"aa".matches("(a)\\\\1")',
      "stopped: matches: a regular expression with a backreference or lookaround is not supported (CEL uses RE2)",
    ],
    [
      "a named backreference",
      '"aa".matches("(?<n>a)\\\\k<n>")',
      "stopped: matches: a regular expression with a backreference or lookaround is not supported (CEL uses RE2)",
    ],
    [
      "a lookahead",
      '"ab".matches("a(?=b)")',
      "stopped: matches: a regular expression with a backreference or lookaround is not supported (CEL uses RE2)",
    ],
    [
      "a negative lookahead",
      '"ab".matches("a(?!c)")',
      "stopped: matches: a regular expression with a backreference or lookaround is not supported (CEL uses RE2)",
    ],
    [
      "a lookbehind",
      '"ab".matches("(?<=a)b")',
      "stopped: matches: a regular expression with a backreference or lookaround is not supported (CEL uses RE2)",
    ],
    [
      "a negative lookbehind",
      '"ab".matches("(?<!c)b")',
      "stopped: matches: a regular expression with a backreference or lookaround is not supported (CEL uses RE2)",
    ],
    [
      "a backreference after an escaped backslash",
      '"a\\\\a".matches("(a)\\\\\\\\\\\\1")',
      "stopped: matches: a regular expression with a backreference or lookaround is not supported (CEL uses RE2)",
    ],
    ["a named group, which is not a lookbehind", '"abc".matches("(?<x>a)")', true],
    [
      "an escaped backslash before a digit, which is not a backreference",
      '"a\\\\1".matches("a\\\\\\\\1")',
      true,
    ],
    ["a digit escape at the start", '"1".matches("\\\\d")', true],
    [
      "a backreference at the start",
      `"a".matches(${JSON.stringify(String.raw`\1`)})`,
      "stopped: matches: a regular expression with a backreference or lookaround is not supported (CEL uses RE2)",
    ],
    [
      "a backreference after two escaped backslashes",
      `"x".matches(${JSON.stringify(String.raw`(a)\\\\\1`)})`,
      "stopped: matches: a regular expression with a backreference or lookaround is not supported (CEL uses RE2)",
    ],
    [
      "two escaped backslashes before a digit",
      `${JSON.stringify(String.raw`a\\1`)}.matches(${JSON.stringify(String.raw`a\\\\1`)})`,
      true,
    ],
    // A call's inputs are its own at each evaluation: the 5000 characters of a string whose match
    // failed (an invalid pattern) are not measured with the next pattern.
    [
      "a match after one that failed",
      `[["(", "${"a".repeat(5000)}"], ["${"a?".repeat(25)}a", "a"]].exists(p, p[1].matches(p[0]))`,
      true,
    ],
    // Comparisons: the elements of both sides, all the way down.
    [
      "a comparison of 49 lists of 1000 with themselves",
      `cel.bind(l, ${L}, cel.bind(m, [${ls(49)}], m == m))`,
      "stopped: a comparison over 196198 elements is over the limit of 100000",
    ],
    [
      "a comparison of 24 lists of 1000 with themselves",
      `cel.bind(l, ${L}, cel.bind(m, [${ls(24)}], m == m))`,
      true,
    ],
    [
      "an inequality of 50 lists of 1000",
      `cel.bind(l, ${L}, cel.bind(m, [${ls(50)}], m != []))`,
      "stopped: a comparison over 100002 elements is over the limit of 100000",
    ],
    [
      "a comparison of maps of lists",
      `cel.bind(l, ${L}, cel.bind(m, {${Array.from({ length: 50 }, (_, i) => `"k${i}": l`).join(", ")}}, m == {}))`,
      "stopped: a comparison over 100002 elements is over the limit of 100000",
    ],
    [
      "a comparison of strings",
      bindS10("cel.bind(t, s + s + s + s + s, t == t + s)"),
      "stopped: a comparison over 110002 elements is over the limit of 100000",
    ],
    [
      "a comparison of bytes, each one value",
      `cel.bind(b, bytes(${Array(12)
        .fill(`"${"a".repeat(5000)}"`)
        .join(" + ")}), b == b)`,
      true,
    ],
    // A method's value measured: hex() doubles its bytes.
    [
      "the hex of 60,000 bytes",
      `bytes(${Array(12)
        .fill(`"${"a".repeat(5000)}"`)
        .join(" + ")}).hex().size()`,
      "stopped: a value of 120000 characters is over the limit of 100000",
    ],
    [
      "the hex of 50,000 bytes",
      `bytes(${Array(10)
        .fill(`"${"a".repeat(5000)}"`)
        .join(" + ")}).hex().size()`,
      100000n,
    ],
    // Membership: the value against each element, and the list.
    [
      "a list in a list of 1000 of them",
      `cel.bind(l, ${L}, l in ${L}.map(x, l))`,
      "stopped: a membership test over 2101051 elements is over the limit of 100000",
    ],
    ["a number in a list of 1000", `999 in ${L}`, true],
    // The size of each value made.
    ["a string of 80,000 characters", bindS10("(s + s + s + s + s + s + s + s).size()"), 80000n],
    [
      "a string of 110,000 characters",
      bindS10("(s + s + s + s + s + s + s + s + s + s + s).size()"),
      "stopped: a value of 110000 characters is over the limit of 100000",
    ],
    [
      "bytes of 128,000",
      `cel.bind(a, "${"é".repeat(1000)}", cel.bind(b, a + a + a + a + a + a + a + a, cel.bind(c, b + b + b + b + b + b + b + b, bytes(c).size() > 0)))`,
      "stopped: a value of 128000 elements is over the limit of 100000",
    ],
    [
      "a list of 110,000",
      `cel.bind(l, ${L}, cel.bind(m, l + l + l + l + l + l + l + l + l + l, (m + m + m + m + m + m + m + m + m + m + m).size()))`,
      "stopped: a value of 110000 elements is over the limit of 100000",
    ],
  ])("%s", (_case, source, expected) => {
    expect(outcome(source)).toEqual(expected);
  });

  it.each([
    [
      "a map of labels over the limit, given as a Map",
      new Map(Array.from({ length: 100_001 }, (_, i) => [`k${i}`, "v"])),
      "stopped: a value of 100001 elements is over the limit of 100000",
    ],
    [
      "a map of labels at the limit",
      new Map(Array.from({ length: 100_000 }, (_, i) => [`k${i}`, "v"])),
      true,
    ],
    [
      "a plain object of labels over the limit, compared",
      Object.fromEntries(Array.from({ length: 100_001 }, (_, i) => [`k${i}`, "v"])),
      "stopped: a comparison over 100003 elements is over the limit of 100000",
    ],
  ])("%s", (_case, labels, expected) => {
    const host = { ...HOST, labels };
    const source = labels instanceof Map ? "host.labels.size() > 0" : "host.labels != {}";
    expect(outcome(source, host)).toEqual(expected);
  });

  it.each([
    ["by name", "host.labels.k.size() > 0"],
    ["by index", 'host.labels["k"].size() > 0'],
  ])("a label over the limit, given by the host, is measured when read %s", (_case, source) => {
    const host = { ...HOST, labels: { k: "x".repeat(110_000) } };
    expect(outcome(source, host)).toBe("stopped: a value of 110000 characters is over the limit of 100000");
    expect(outcome(source, { ...HOST, labels: { k: "x".repeat(100_000) } })).toBe(true);
  });

  it("reads the clock every 256 steps", () => {
    const evaluate = environment.parse(`${L}.exists(a, a < 0)`);
    guardTree(evaluate.ast);
    let reads = 0;
    const value = runGuarded(
      () => evaluate({ host: HOST }),
      () => {
        reads++;
        return 0;
      },
    );
    expect(value).toBe(false);
    // Each iteration is a few steps: 1000 of them read the clock some 1000 x steps / 256 times.
    expect(reads).toBeGreaterThan(10);
    expect(reads).toBeLessThan(100);
  });

  it("a clock at the deadline does not stop the evaluation: the first read sets it", () => {
    const evaluate = environment.parse(`${L}.exists(a, a < 0)`);
    guardTree(evaluate.ast);
    let first = true;
    const clock = () => {
      if (first) {
        first = false;
        return 0;
      }
      return EVALUATION_MAX_MS;
    };
    expect(runGuarded(() => evaluate({ host: HOST }), clock)).toBe(false);
  });

  it("an evaluation of fewer than 256 steps never reads the clock", () => {
    const evaluate = environment.parse(`${list(20)}.exists(a, a < 0)`);
    guardTree(evaluate.ast);
    let reads = 0;
    expect(
      runGuarded(
        () => evaluate({ host: HOST }),
        () => {
          reads++;
          return 0;
        },
      ),
    ).toBe(false);
    expect(reads).toBe(0);
  });

  it("counts a guarded evaluation inside another against the outer one", () => {
    // Each alone is under the step limit; the two together are over it.
    const evaluate = environment.parse(`${L}.map(a, ${list(10)}.exists(b, b < 0)).size() > 0`);
    guardTree(evaluate.ast);
    expect(
      runGuarded(
        () => evaluate({ host: HOST }),
        () => 0,
      ),
    ).toBe(true);
    let error: unknown;
    try {
      runGuarded(
        () => {
          runGuarded(() => evaluate({ host: HOST }));
          return evaluate({ host: HOST });
        },
        () => 0,
      );
    } catch (caught) {
      error = caught;
    }
    expect(error).toBeInstanceOf(EvaluationLimitError);
    expect((error as Error).message).toBe(`evaluation stopped at the limit of ${EVALUATION_MAX_STEPS} steps`);
  });

  it("passes an error of the expression on as it is, and the next evaluation starts afresh", () => {
    const missing = environment.parse("host.labels.rack == 'a'");
    guardTree(missing.ast);
    expect(() => runGuarded(() => missing({ host: HOST }))).toThrow(/No such key: rack/);
    expect(() => runGuarded(() => missing({ host: HOST }))).not.toThrow(EvaluationLimitError);
    const thrown = new RangeError("not the guard's");
    expect(() =>
      runGuarded(() => {
        throw thrown;
      }),
    ).toThrow(thrown);
    // After one stopped, the same tree evaluates again, under the guard or outside it.
    const big = environment.parse(`${L}.exists(a, ${L}.exists(b, a + b < 0)) || host.speed > 0.0`);
    guardTree(big.ast);
    expect(() =>
      runGuarded(
        () => big({ host: HOST }),
        () => 0,
      ),
    ).toThrow(EvaluationLimitError);
    const small = environment.parse('[1, 2].exists(a, a == 2) && host.name + "x" == "h1x"');
    guardTree(small.ast);
    expect(small({ host: HOST })).toBe(true);
    // Outside the guard nothing is measured.
    const long = environment.parse(bindS10("(s + s + s + s + s + s + s + s + s + s + s).size()"));
    guardTree(long.ast);
    expect(long({ host: HOST })).toBe(110000n);
    expect(runGuarded(() => small({ host: HOST }))).toBe(true);
  });

  it("a stopped evaluation is reported as stopped even when the expression caught the stop", () => {
    // `||` and the quantifiers go on through errors: the guard's verdict stands.
    const evaluate = environment.parse(`(${L}.exists(a, ${L}.exists(b, a + b < 0))) || true`);
    guardTree(evaluate.ast);
    let error: unknown;
    try {
      runGuarded(
        () => evaluate({ host: HOST }),
        () => 0,
      );
    } catch (caught) {
      error = caught;
    }
    expect((error as Error).message).toBe(`evaluation stopped at the limit of ${EVALUATION_MAX_STEPS} steps`);
  });
});

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
    // (EVALUATION_MAX_MS), which then stops the evaluation first: another try, at most two more.
    for (let tries = 1; tries < 3 && value instanceof EvaluationLimitError && value.outOfTime; tries++)
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

// The guard at evaluation: whatever the estimate at submit said (cel-cost.ts), and for expressions
// it never saw (stored by older code), one evaluation of a requirements or rank expression holds the
// event loop a few milliseconds at most. cel-js has no hook for this, so the guard wraps the
// `evaluate` of each node of a checked syntax tree (including the comprehensions its macros expand
// to): each node evaluated is a step, counted against a limit, with the clock read every 256
// steps; every value made is measured against a size limit; and the few library calls whose work
// is more than linear in their inputs (join, matches, deep comparison) have their inputs measured
// before they run. Once tripped, every node throws at once and the quantifiers' loops stop, so the
// evaluation unwinds in a few steps; the caller gets an EvaluationLimitError.
//
// Regular expressions: V8 falls back to its linear-time engine after too much backtracking with
// the flag set below (the CEL standard's RE2 has no backtracking either); that engine has no
// backreferences or lookaround, which RE2 does not have either, so patterns with them are refused.

import { setFlagsFromString } from "node:v8";
import type { ASTNode } from "@marcbachmann/cel-js";
import { CEL_COST_BUDGET } from "./cel-cost.ts";

setFlagsFromString("--enable-experimental-regexp-engine-on-excessive-backtracks");

/** Nodes one evaluation may evaluate: the budget of the estimate, which counts in the same steps. */
export const EVALUATION_MAX_STEPS = CEL_COST_BUDGET;

/**
 * Milliseconds one evaluation may take after its first 256 steps (the clock is read every 256
 * steps, so an evaluation of fewer never reads it). Code not yet optimised runs several times
 * slower, and a busy machine slower still: running out of time fails that evaluation only, and is
 * not held against the expression (compileExpression), unlike running out of steps or size.
 */
export const EVALUATION_MAX_MS = 5;

/**
 * The largest value an evaluation may make or read (characters of a string, elements of a list or
 * map), and the most elements a call may go through at once (a join's result, a comparison of
 * nested lists, a regular expression's string times its pattern).
 */
export const EVALUATION_MAX_VALUE_SIZE = CEL_COST_BUDGET;

/** Every 256 steps the clock is read (a read costs about as much as a few steps). */
const CLOCK_EVERY = 256;

/** Why an evaluation was stopped; the host does not match, the rank is the lowest. */
export class EvaluationLimitError extends Error {
  /** Out of time (which a busy machine or code not yet optimised can cause), rather than of steps or size. */
  readonly outOfTime: boolean;
  constructor(message: string, outOfTime = false) {
    super(message);
    this.name = "EvaluationLimitError";
    this.outOfTime = outOfTime;
  }
}

/** A backreference (`\1`, `\k<name>`) or lookaround (`(?=`, `(?!`, `(?<=`, `(?<!`), escaped backslashes aside. */
const NOT_RE2 = /(?:^|[^\\])(?:\\\\)*(?:\\[1-9]|\\k<|\(\?<?[=!])/;

/** The process's clock, in milliseconds: what the time limit is measured on. */
function processClock(): number {
  return performance.now();
}

// One evaluation at a time (the event loop is single-threaded and evaluation is synchronous).
const meter = {
  active: false,
  steps: 0,
  /** When the evaluation runs out of time, set when the clock is first read (0 until then). */
  deadline: 0,
  /** Steps at which the clock is read next. */
  nextClock: 0,
  stopped: null as string | null,
  /** Whether the evaluation stopped for its time: set with `stopped`, and read only when that is set. */
  outOfTime: false,
  /** The clock of this evaluation, in milliseconds. */
  clock: processClock,
};

/** Thrown inside the tree once the meter tripped: made once, so unwinding costs no stack traces. */
const STOP = new EvaluationLimitError("evaluation stopped");

function trip(reason: string, outOfTime = false): never {
  if (meter.stopped === null) {
    meter.stopped = reason;
    meter.outOfTime = outOfTime;
  }
  throw STOP;
}

/**
 * Runs one evaluation under the guard; an EvaluationLimitError if it tripped. `clock` (in
 * milliseconds) is read for the time limit: the process's own, unless a test gives another.
 */
export function runGuarded<T>(evaluate: () => T, clock: () => number = processClock): T {
  if (meter.active) return evaluate();
  meter.active = true;
  meter.clock = clock;
  meter.steps = 0;
  meter.stopped = null;
  meter.deadline = 0;
  meter.nextClock = CLOCK_EVERY;
  try {
    const value = evaluate();
    if (meter.stopped !== null) throw new EvaluationLimitError(meter.stopped, meter.outOfTime);
    return value;
  } catch (error) {
    if (meter.stopped !== null) throw new EvaluationLimitError(meter.stopped, meter.outOfTime);
    throw error;
  } finally {
    meter.active = false;
    meter.stopped = null;
  }
}

type Evaluate = (this: unknown, ev: unknown, ast: unknown, ctx: unknown) => unknown;
/** A node as this guard uses it: cel-js's declarations leave out `evaluate` and `meta`. */
interface Node {
  readonly op: string;
  readonly args: unknown;
  evaluate: Evaluate;
  readonly meta: { alternate?: Node; macro?: { evaluate: Evaluate }; evaluate: Evaluate };
}

/** A call whose inputs are measured before it runs: the values of its operands, by position. */
interface Measured {
  readonly inputs: unknown[];
  readonly check: (inputs: unknown[]) => void;
}

/** Ops whose value may be a long string or list: their values are measured. */
const MAKERS = new Set(["+", "list", "map", "call", "rcall", ".", "[]"]);

/**
 * Installs the guard on a checked tree (the type check sets what each node evaluates to). Only the
 * nodes that need it are wrapped, so that the guard costs little: the step of each comprehension,
 * which counts the nodes of its body at each iteration (outside loops, a tree evaluates each node
 * at most once, and the estimate counted them all); the nodes that may make long values; and the
 * operands of the calls measured before they run.
 */
export function guardTree(root: ASTNode): void {
  const loopSteps = new Map<Node, number>();
  for (const node of nodesOf(root)) {
    if (node.op !== "comprehension") continue;
    // Every comprehension cel-js's macros expand to has a step (macros.js).
    const step = (node.args as { step: Node }).step;
    loopSteps.set(step, nodesOf(step).length);
    guardLoop(node);
  }
  const operandOf = new Map<Node, { call: Measured; index: number }>();
  const measuredCalls = new Map<Node, Measured>();
  for (const node of nodesOf(root)) {
    const call = measuredCall(node);
    if (!call) continue;
    measuredCalls.set(node, call);
    operandsOf(node).forEach((operand, index) => {
      operandOf.set(operand, { call, index });
    });
  }
  for (const node of nodesOf(root)) {
    const steps = loopSteps.get(node) ?? 0;
    const own = measuredCalls.get(node) ?? null;
    const operand = operandOf.get(node) ?? null;
    if (steps > 0 || own || operand || MAKERS.has(node.op)) wrap(node, steps, own, operand);
  }
}

/**
 * The nodes of a tree, each once: through operands and the comprehensions macros expand to. The
 * other macros (`has`, `cel.bind`) keep their parts among the call's arguments. A node is an object
 * of cel-js's class of nodes, the root's.
 */
function nodesOf(root: object): Node[] {
  const nodeClass = Object.getPrototypeOf(root);
  const seen = new Set<object>();
  const nodes: Node[] = [];
  const visit = (value: unknown): void => {
    if (value === null || typeof value !== "object" || seen.has(value)) return;
    seen.add(value);
    if (Array.isArray(value)) {
      for (const item of value) visit(item);
    } else if (Object.getPrototypeOf(value) === nodeClass) {
      const node = value as Node;
      nodes.push(node);
      visit(node.args);
      visit(node.meta.alternate);
    } else if (Object.getPrototypeOf(value) === Object.prototype) {
      // The plain objects cel-js keeps nodes in (a comprehension's parts); not its contexts.
      for (const item of Object.values(value)) visit(item);
    }
  };
  visit(root);
  return nodes;
}

function wrap(
  node: Node,
  steps: number,
  own: Measured | null,
  operandOf: { call: Measured; index: number } | null,
): void {
  const meta = node.meta;
  const alternate = meta.alternate;
  const macro = meta.macro;
  const evaluate = meta.evaluate;
  node.evaluate = function guarded(ev, ast, ctx) {
    if (meter.stopped !== null) throw STOP;
    if (steps > 0 && meter.active) count(steps);
    if (own) own.inputs.length = 0;
    const value = alternate
      ? alternate.evaluate(ev, alternate, ctx)
      : macro
        ? macro.evaluate(ev, macro, ctx)
        : evaluate.call(node, ev, ast, ctx);
    if (meter.active) {
      if (own) own.inputs.length = 0;
      checkSize(value);
      if (operandOf) {
        operandOf.call.inputs[operandOf.index] = value;
        operandOf.call.check(operandOf.call.inputs);
      }
    }
    return value;
  };
}

/** Counts an iteration's steps, and reads the clock every 256 steps or so. */
function count(steps: number): void {
  meter.steps += steps;
  if (meter.steps > EVALUATION_MAX_STEPS)
    trip(`evaluation stopped at the limit of ${EVALUATION_MAX_STEPS} steps`);
  if (meter.steps < meter.nextClock) return;
  const now = meter.clock();
  if (meter.deadline === 0) meter.deadline = now + EVALUATION_MAX_MS;
  else if (now > meter.deadline) trip(`evaluation stopped at the limit of ${EVALUATION_MAX_MS} ms`, true);
  meter.nextClock = meter.steps + CLOCK_EVERY;
}

/** A quantifier (all, exists) goes on through errors in its body: it is told to stop once tripped. */
function guardLoop(node: Node): void {
  const parts = node.args as unknown as { condition?: (accu: unknown) => boolean };
  const condition = parts.condition;
  if (typeof condition !== "function") return;
  parts.condition = (accu) => meter.stopped === null && condition(accu);
}

function checkSize(value: unknown): void {
  if (typeof value === "string") {
    if (value.length > EVALUATION_MAX_VALUE_SIZE) overSize(value.length, "characters");
  } else if (Array.isArray(value) || value instanceof Uint8Array) {
    if (value.length > EVALUATION_MAX_VALUE_SIZE) overSize(value.length, "elements");
  } else if (value instanceof Map) {
    if (value.size > EVALUATION_MAX_VALUE_SIZE) overSize(value.size, "elements");
  }
}

function overSize(size: number, unit: string): never {
  trip(`a value of ${size} ${unit} is over the limit of ${EVALUATION_MAX_VALUE_SIZE}`);
}

/** The operand nodes of a measured call (a method, or `==`, `!=`, `in`), in the positions its inputs use. */
function operandsOf(node: Node): Node[] {
  if (node.op !== "rcall") return node.args as Node[];
  const [, receiver, args] = node.args as [string, Node, Node[]];
  return [receiver, ...args];
}

function measuredCall(node: Node): Measured | null {
  if (node.op === "==" || node.op === "!=") {
    return measured(([left, right]) => overWork(elements(left) + elements(right), "a comparison"));
  }
  if (node.op === "in") {
    return measured(([value, list]) => {
      const length = Array.isArray(list) ? list.length : 0;
      overWork(length * elements(value) + elements(list), "a membership test");
    });
  }
  if (node.op !== "rcall") return null;
  const name = (node.args as [string])[0];
  if (name === "join") {
    return measured(([list, separator]) => {
      if (!Array.isArray(list)) return;
      let length = typeof separator === "string" ? separator.length * list.length : 0;
      for (const item of list) length += typeof item === "string" ? item.length : 0;
      overWork(length, "a join");
    });
  }
  if (name === "matches") {
    return measured(([text, pattern]) => {
      if (typeof pattern !== "string") return;
      if (NOT_RE2.test(pattern)) {
        trip(
          "matches: a regular expression with a backreference or lookaround is not supported (CEL uses RE2)",
        );
      }
      if (typeof text === "string")
        overWork(Math.max(1, text.length) * Math.max(1, pattern.length), "matches");
    });
  }
  return null;
}

function measured(check: (inputs: unknown[]) => void): Measured {
  return { inputs: [], check };
}

function overWork(work: number, what: string): void {
  if (work > EVALUATION_MAX_VALUE_SIZE) {
    trip(`${what} over ${work} elements is over the limit of ${EVALUATION_MAX_VALUE_SIZE}`);
  }
}

/** Elements of a value all the way down (what a deep comparison visits), counted up to just past the limit. */
function elements(value: unknown): number {
  let count = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && count <= EVALUATION_MAX_VALUE_SIZE) {
    const each = stack.pop();
    count++;
    if (typeof each === "string") count += each.length;
    else if (each === null || typeof each !== "object") continue;
    else if (Array.isArray(each)) {
      count += each.length;
      if (count <= EVALUATION_MAX_VALUE_SIZE) for (const item of each) stack.push(item);
    } else if (each instanceof Map) {
      count += each.size;
      if (count <= EVALUATION_MAX_VALUE_SIZE) for (const [key, item] of each) stack.push(key, item);
    } else if (Object.getPrototypeOf(each) === Object.prototype) {
      const entries = Object.entries(each);
      count += entries.length;
      if (count <= EVALUATION_MAX_VALUE_SIZE) for (const [key, item] of entries) stack.push(key, item);
    }
  }
  return count;
}

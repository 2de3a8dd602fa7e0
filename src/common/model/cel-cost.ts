// The cost of a requirements or rank expression, estimated from its syntax tree before it is
// accepted: the scheduler evaluates it on every host at every pass, on the event loop, so an
// expression such as `[0,...,999].exists(a, [0,...,999].exists(b, [0,...,999].exists(c, ...)))`
// (10^9 steps a host) would freeze the broker, and its standby after it. The estimate is an upper
// bound in "steps": one a node evaluated (the unit of the runtime guard, cel-guard.ts), plus one a
// character or element for operations that go through a whole string or list. Comprehensions
// (all, exists, exists_one, map, filter) multiply their body by the size of their range, and nested
// ones multiply again.

import type { ASTNode } from "@marcbachmann/cel-js";

/**
 * The most steps a requirements or rank expression may be estimated to cost on one host. About
 * 5 ms of evaluation at 50 ns a step (measured: 10^6 iterations of `a + b < 0` take 230 ms here),
 * and far above what a real expression costs: a comparison of facts is a few steps, a
 * comprehension over a host's labels a few thousand.
 */
export const CEL_COST_BUDGET = 100_000;

/**
 * Labels a host is assumed to have at most, for the size of `host.labels` in a comprehension. The
 * labels are what the host's administrator gives the agent (`--label k=v`), a handful in practice
 * (zone, rack, gpu model); 64 leaves room for generous ones and keeps a comprehension over them
 * (64 x its body) well under the budget. A host with more is still bounded at evaluation (cel-guard.ts).
 */
export const ASSUMED_MAX_HOST_LABELS = 64;

/**
 * Characters a host's string fact (name, pool, os, arch, a label's key or value) is assumed to have
 * at most: a host name is at most 253, the others are shorter.
 */
export const ASSUMED_MAX_FACT_CHARS = 256;

/**
 * Folders a host is assumed to share at most, for the size of `host.shared`: an agent takes no more
 * (its `--shared`); each is assumed a fact string long (a longer path is still bounded at evaluation).
 */
export const ASSUMED_MAX_SHARED_FOLDERS = 64;

/** Characters assumed for a number or other scalar turned into a string. */
const SCALAR_STRING_CHARS = 32;

/** What the estimate knows of a value: its length (characters or elements; 0 for a scalar) and its elements'. */
interface Shape {
  readonly size: number;
  readonly item: Shape | null;
}

const SCALAR: Shape = { size: 0, item: null };
const FACT_STRING: Shape = { size: ASSUMED_MAX_FACT_CHARS, item: null };
const HOST_LABELS: Shape = { size: ASSUMED_MAX_HOST_LABELS, item: FACT_STRING };
const HOST_SHARED: Shape = { size: ASSUMED_MAX_SHARED_FOLDERS, item: FACT_STRING };
const STRING_FACTS = new Set(["name", "pool", "os", "arch"]);
/** A value nothing is known of: as big as a fact string (the host's facts are all the input there is). */
const UNKNOWN: Shape = FACT_STRING;

interface Estimate {
  readonly cost: number;
  readonly shape: Shape;
}

type Scope = ReadonlyMap<string, Shape | "host">;

const COMPREHENSIONS = new Set(["all", "exists", "exists_one", "map", "filter"]);
/** Each iteration evaluates the step, its accumulator and the loop's test, besides the body. */
const ITERATION_STEPS = 3;

/** The estimated cost in steps of evaluating the expression once, saturated at Number.MAX_SAFE_INTEGER. */
export function estimateCost(ast: ASTNode): number {
  const cost = estimate(ast, new Map([["host", "host"]])).cost;
  return Number.isFinite(cost) ? Math.min(Math.ceil(cost), Number.MAX_SAFE_INTEGER) : Number.MAX_SAFE_INTEGER;
}

/** The refusal of an expression over the budget (`estimated cost N steps is over the limit of M`), or null. */
export function costProblem(ast: ASTNode): string | null {
  const cost = estimateCost(ast);
  return cost > CEL_COST_BUDGET
    ? `estimated cost ${cost} steps is over the limit of ${CEL_COST_BUDGET}`
    : null;
}

function estimate(node: ASTNode, scope: Scope): Estimate {
  const args: unknown = node.args;
  switch (node.op) {
    case "value":
      return { cost: 1, shape: literalShape(args) };
    case "id": {
      const bound = scope.get(args as string);
      return { cost: 1, shape: bound === "host" || bound === undefined ? UNKNOWN : bound };
    }
    case ".":
    case ".?": {
      const [target, field] = args as [ASTNode, string];
      if (target.op === "id" && scope.get(target.args as string) === "host") {
        return { cost: 2, shape: hostFact(field) };
      }
      const of = estimate(target, scope);
      return { cost: of.cost + 1, shape: of.shape.item ?? UNKNOWN };
    }
    case "[]":
    case "[?]": {
      const [target, index] = args as [ASTNode, ASTNode];
      const of = estimate(target, scope);
      const at = estimate(index, scope);
      return { cost: of.cost + at.cost + 1, shape: of.shape.item ?? UNKNOWN };
    }
    case "list": {
      const items = (args as ASTNode[]).map((item) => estimate(item, scope));
      return {
        cost: 1 + sum(items.map((item) => item.cost)),
        shape: { size: items.length, item: mergeAll(items.map((item) => item.shape)) },
      };
    }
    case "map": {
      const entries = (args as [ASTNode, ASTNode][]).flatMap(([key, value]) => [
        estimate(key, scope),
        estimate(value, scope),
      ]);
      return {
        cost: 1 + sum(entries.map((entry) => entry.cost)),
        shape: { size: entries.length / 2, item: mergeAll(entries.map((entry) => entry.shape)) },
      };
    }
    case "call":
    case "rcall":
      return estimateCall(node, scope);
    case "?:": {
      const [condition, yes, no] = (args as ASTNode[]).map((operand) => estimate(operand, scope));
      return { cost: 1 + condition.cost + yes.cost + no.cost, shape: merge(yes.shape, no.shape) ?? SCALAR };
    }
    case "!_":
    case "-_": {
      const operand = estimate(args as ASTNode, scope);
      return { cost: 1 + operand.cost, shape: SCALAR };
    }
    default:
      if (Array.isArray(args) && args.length === 2) return estimateBinary(node.op, args as ASTNode[], scope);
      return estimateUnknown(args, scope);
  }
}

function estimateBinary(op: string, operands: ASTNode[], scope: Scope): Estimate {
  const [left, right] = operands.map((operand) => estimate(operand, scope));
  const cost = 1 + left.cost + right.cost;
  switch (op) {
    case "+": {
      // Strings and lists are copied into the result (a list element by element).
      const shape: Shape = {
        size: left.shape.size + right.shape.size,
        item: merge(left.shape.item, right.shape.item),
      };
      return { cost: cost + shape.size, shape };
    }
    case "==":
    case "!=":
      // Lists and maps compare element by element, nested ones all the way down.
      return { cost: cost + weight(left.shape) + weight(right.shape), shape: SCALAR };
    case "in":
      // Each element of the list compared with the value (a map is a lookup; counted as a list).
      return {
        cost: cost + right.shape.size * (1 + weight(left.shape)) + weight(right.shape),
        shape: SCALAR,
      };
    case "<":
    case "<=":
    case ">":
    case ">=":
      return { cost: cost + left.shape.size + right.shape.size, shape: SCALAR };
    default:
      return { cost, shape: SCALAR };
  }
}

function estimateCall(node: ASTNode, scope: Scope): Estimate {
  const method = node.op === "rcall";
  const [name, receiverNode, argNodes] = method
    ? (node.args as [string, ASTNode, ASTNode[]])
    : [(node.args as [string, ASTNode[]])[0], null, (node.args as [string, ASTNode[]])[1]];

  if (receiverNode && COMPREHENSIONS.has(name) && argNodes.length >= 2 && argNodes[0].op === "id") {
    return estimateComprehension(name, receiverNode, argNodes, scope);
  }
  if (name === "bind" && receiverNode?.op === "id" && receiverNode.args === "cel" && argNodes.length === 3) {
    const value = estimate(argNodes[1], scope);
    const inner = new Map(scope).set(argNodes[0].args as string, value.shape);
    const body = estimate(argNodes[2], inner);
    return { cost: 1 + value.cost + body.cost, shape: body.shape };
  }
  if (!method && name === "has") {
    const [operand] = argNodes.map((arg) => estimate(arg, scope));
    return { cost: 1 + (operand?.cost ?? 0), shape: SCALAR };
  }

  const receiver = receiverNode ? estimate(receiverNode, scope) : null;
  const operands = argNodes.map((arg) => estimate(arg, scope));
  const cost = 1 + (receiver?.cost ?? 0) + sum(operands.map((operand) => operand.cost));
  // The value the function works on: the receiver of a method, else the first argument.
  const subject = receiver?.shape ?? operands[0]?.shape ?? SCALAR;
  const other = (receiver ? operands[0]?.shape : operands[1]?.shape) ?? SCALAR;
  const work = (steps: number, shape: Shape): Estimate => ({ cost: cost + steps, shape });
  switch (name) {
    case "size":
    case "type":
      return work(0, SCALAR);
    case "dyn":
      return work(0, subject);
    case "startsWith":
    case "endsWith":
      return work(other.size, SCALAR);
    case "contains":
    case "indexOf":
    case "lastIndexOf":
    case "matches":
      // A search (or a regular expression, run by the linear engine) is at worst the product.
      return work(Math.max(1, subject.size) * Math.max(1, other.size), SCALAR);
    case "lowerAscii":
    case "upperAscii":
    case "trim":
    case "substring":
      return work(subject.size, subject);
    case "split":
      return work(subject.size, { size: subject.size + 1, item: subject });
    case "join": {
      const joined = subject.size * ((subject.item?.size ?? UNKNOWN.size) + other.size);
      return work(weight(subject) + joined, { size: joined, item: null });
    }
    case "string":
      return work(subject.size, { size: Math.max(subject.size, SCALAR_STRING_CHARS), item: null });
    case "bytes":
      return work(subject.size, { size: subject.size * 4, item: null });
    default:
      // Conversions, timestamps, durations and their getters: at most one pass over their input.
      return work(subject.size + other.size, SCALAR);
  }
}

function estimateComprehension(
  name: string,
  receiverNode: ASTNode,
  argNodes: ASTNode[],
  scope: Scope,
): Estimate {
  const range = estimate(receiverNode, scope);
  // A map is iterated over its keys; both are in `item`.
  const element = range.shape.item ?? UNKNOWN;
  const inner = new Map(scope).set(argNodes[0].args as string, element);
  const bodies = argNodes.slice(1).map((arg) => estimate(arg, inner));
  const perElement = ITERATION_STEPS + sum(bodies.map((body) => body.cost));
  const cost = 2 + range.cost + range.shape.size * perElement;
  const last = bodies[bodies.length - 1].shape;
  switch (name) {
    case "map":
      return { cost, shape: { size: range.shape.size, item: last } };
    case "filter":
      return { cost, shape: { size: range.shape.size, item: element } };
    default:
      return { cost, shape: SCALAR };
  }
}

/** An operator or node this estimate does not know: every node in it counted, sizes merged. */
function estimateUnknown(args: unknown, scope: Scope): Estimate {
  const nodes = childNodes(args);
  const parts = nodes.map((child) => estimate(child, scope));
  return {
    cost: 1 + sum(parts.map((part) => part.cost + part.shape.size)),
    shape: mergeAll(parts.map((part) => part.shape)) ?? SCALAR,
  };
}

function hostFact(field: string): Shape {
  if (field === "labels") return HOST_LABELS;
  if (field === "shared") return HOST_SHARED;
  if (STRING_FACTS.has(field)) return FACT_STRING;
  return SCALAR;
}

function literalShape(value: unknown): Shape {
  if (typeof value === "string") return { size: value.length, item: null };
  if (value instanceof Uint8Array) return { size: value.length, item: null };
  return SCALAR;
}

/** Elements all the way down: what a deep comparison may visit. */
function weight(shape: Shape | null): number {
  if (!shape || shape.size === 0) return 1;
  return shape.size * (shape.item ? 1 + weight(shape.item) : 1);
}

function merge(a: Shape | null, b: Shape | null): Shape | null {
  if (!a) return b;
  if (!b) return a;
  return { size: Math.max(a.size, b.size), item: merge(a.item, b.item) };
}

function mergeAll(shapes: Shape[]): Shape | null {
  return shapes.reduce<Shape | null>((all, shape) => merge(all, shape), null);
}

function sum(values: number[]): number {
  return values.reduce((all, value) => all + value, 0);
}

function childNodes(args: unknown): ASTNode[] {
  if (Array.isArray(args)) return args.flatMap(childNodes);
  if (args !== null && typeof args === "object" && "op" in args && "args" in args) return [args as ASTNode];
  return [];
}

// Requirements clause by clause, for explain (HTCondor's `condor_q -better-analyze`): a requirements
// expression is the `&&` of its clauses, found through nested `&&` and parentheses; an `||`, a `!`
// or anything else is one clause. Each clause keeps the text the user wrote, so explain can say
// which one rules a host out (`host.memFreeMb >= 1e9 is false (host.memFreeMb = 8000)`) instead of
// "the requirements are false".

import { type ASTNode, serialize } from "@marcbachmann/cel-js";
import { type CompiledExpression, compileExpression, firstLine } from "./cel.ts";
import type { HostFacts } from "./host-facts.ts";

/** A host fact a clause reads: `host.memFreeMb`, or one label, `host.labels.zone`. */
export type FactRead = { fact: string } | { label: string };

export interface Clause {
  /** The clause as written in the requirements (regenerated from the syntax tree if it cannot be cut out). */
  readonly source: string;
  readonly evaluate: CompiledExpression;
  /** The host facts it reads, each once, in order of appearance: explain shows their values. */
  readonly reads: readonly FactRead[];
}

/** A clause on one host: it holds, it is false (or not a boolean), or it cannot be evaluated. */
export type ClauseOutcome =
  | { clause: Clause; holds: true }
  | { clause: Clause; holds: false; value: unknown }
  | { clause: Clause; holds: false; error: string };

// The scheduler compiles a job's requirements once; the split is kept with that compiled expression.
const clausesByExpression = new WeakMap<CompiledExpression, readonly Clause[]>();

/** The top-level `&&` clauses of a requirements expression (one clause when it has no `&&`). */
export function requirementClauses(expression: CompiledExpression): readonly Clause[] {
  let clauses = clausesByExpression.get(expression);
  if (!clauses) {
    clauses = splitClauses(expression);
    clausesByExpression.set(expression, clauses);
  }
  return clauses;
}

function splitClauses(expression: CompiledExpression): Clause[] {
  const ast = expression.ast;
  // An expression built without its text (a test's hand-made function) is one opaque clause.
  if (!ast) return [{ source: expression.source ?? "requirements", evaluate: expression, reads: [] }];
  const nodes = conjuncts(ast);
  if (nodes.length === 1) {
    return [{ source: sourceOf(ast), evaluate: expression, reads: factReads(ast) }];
  }
  return nodes.map((node) => {
    const source = sourceOf(node);
    return { source, evaluate: compileExpression(source), reads: factReads(node) };
  });
}

function conjuncts(node: ASTNode): ASTNode[] {
  return node.op === "&&" ? [...conjuncts(node.args[0]), ...conjuncts(node.args[1])] : [node];
}

/**
 * The node's text as the user wrote it. The parser's ranges leave out parentheses at the edges of
 * a node (`x > (1.0)` comes out as `x > (1.0`), so the cut is widened to balance them, and kept
 * only when it parses back to the same tree; otherwise the tree is printed back.
 */
function sourceOf(node: ASTNode): string {
  const expected = serialize(node);
  const cut = balancedRange(node.input, node.range.start, node.range.end);
  if (cut) {
    const text = node.input.slice(cut.start, cut.end).trim();
    try {
      const reparsed = compileExpression(text).ast;
      if (reparsed && serialize(reparsed) === expected) return text;
    } catch {
      // Not a whole expression: print the tree back.
    }
  }
  return expected;
}

/** Widens [start, end) over the parentheses it leaves open, or null when they are not there. */
function balancedRange(input: string, start: number, end: number): { start: number; end: number } | null {
  let depth = 0;
  let lowest = 0;
  let quote: string | null = null;
  for (let i = start; i < end; i++) {
    const char = input[i];
    if (quote) {
      if (char === "\\") i++;
      else if (char === quote) quote = null;
    } else if (char === '"' || char === "'") quote = char;
    else if (char === "(") depth++;
    else if (char === ")") lowest = Math.min(lowest, --depth);
  }
  let from = start;
  for (let open = -lowest; open > 0; open--) {
    from--;
    while (from >= 0 && /\s/.test(input[from])) from--;
    if (input[from] !== "(") return null;
  }
  let to = end;
  for (let close = depth - lowest; close > 0; close--) {
    while (to < input.length && /\s/.test(input[to])) to++;
    if (input[to] !== ")") return null;
    to++;
  }
  return { start: from, end: to };
}

/** `host.x` and `host.labels.k` / `host.labels["k"]` read anywhere in the node. */
function factReads(root: ASTNode): FactRead[] {
  const reads: FactRead[] = [];
  const seen = new Set<string>();
  const add = (read: FactRead) => {
    const key = "fact" in read ? `fact:${read.fact}` : `label:${read.label}`;
    if (seen.has(key)) return;
    seen.add(key);
    reads.push(read);
  };
  const visit = (node: ASTNode): void => {
    const read = factRead(node);
    if (read) add(read);
    else for (const child of childNodes(node.args)) visit(child);
  };
  visit(root);
  return reads;
}

/** The fact this node reads, when it is `host.x`, `host.labels.k` or `host.labels["k"]`. */
function factRead(node: ASTNode): FactRead | null {
  if (node.op === "." && isHostLabels(node.args[0])) return { label: node.args[1] };
  if (node.op === "[]" && isHostLabels(node.args[0])) {
    const key = node.args[1];
    if (key.op === "value" && typeof key.args === "string") return { label: key.args };
  }
  if (node.op === "." && node.args[0].op === "id" && node.args[0].args === "host")
    return { fact: node.args[1] };
  return null;
}

function isHostLabels(node: ASTNode): boolean {
  return (
    node.op === "." && node.args[1] === "labels" && node.args[0].op === "id" && node.args[0].args === "host"
  );
}

/** The nodes among a node's operands, whatever their shape (a node, a list, a call's arguments). */
function childNodes(args: unknown): ASTNode[] {
  if (Array.isArray(args)) return args.flatMap(childNodes);
  if (args !== null && typeof args === "object" && "op" in args && "range" in args) return [args as ASTNode];
  return [];
}

/** Each clause on this host, in order. */
function evaluateClauses(expression: CompiledExpression, host: HostFacts): ClauseOutcome[] {
  return requirementClauses(expression).map((clause) => evaluateClause(clause, host));
}

/** The clauses that rule this host out: false, or not evaluable (a missing label, say). Empty when all hold. */
export function failingClauses(expression: CompiledExpression, host: HostFacts): ClauseOutcome[] {
  return evaluateClauses(expression, host).filter((outcome) => !outcome.holds);
}

export function evaluateClause(clause: Clause, host: HostFacts): ClauseOutcome {
  try {
    const value = clause.evaluate(host);
    return value === true ? { clause, holds: true } : { clause, holds: false, value };
  } catch (error) {
    const missing = clause.reads.flatMap((read) =>
      "label" in read && !Object.hasOwn(host.labels, read.label) ? [JSON.stringify(read.label)] : [],
    );
    if (missing.length > 0) {
      return {
        clause,
        holds: false,
        error: `host has no label${missing.length === 1 ? "" : "s"} ${missing.join(", ")}`,
      };
    }
    return { clause, holds: false, error: firstLine(error) };
  }
}

/**
 * Why the clause does not hold, without the clause: `is false (host.memFreeMb = 8000)`, or
 * `cannot be evaluated: host has no label "zone"`.
 */
export function whyClauseFails(outcome: ClauseOutcome, host: HostFacts): string {
  if (outcome.holds) return "holds";
  if ("error" in outcome) return `cannot be evaluated: ${outcome.error}`;
  const values = readValues(outcome.clause, host);
  const verdict = outcome.value === false ? "is false" : `is ${describeValue(outcome.value)}, not true`;
  return values ? `${verdict} (${values})` : verdict;
}

/** `host.memFreeMb = 8000, host.labels.zone is missing`: the facts the clause reads, on this host. */
function readValues(clause: Clause, host: HostFacts): string {
  const facts: Record<string, unknown> = { ...host };
  return clause.reads
    .map((read) => {
      if ("label" in read) {
        const name = /^[A-Za-z_][A-Za-z0-9_]*$/.test(read.label)
          ? `host.labels.${read.label}`
          : `host.labels[${JSON.stringify(read.label)}]`;
        return Object.hasOwn(host.labels, read.label)
          ? `${name} = ${describeValue(host.labels[read.label])}`
          : `${name} is missing`;
      }
      return `host.${read.fact} = ${describeValue(facts[read.fact])}`;
    })
    .join(", ");
}

function describeValue(value: unknown): string {
  if (typeof value === "number" || typeof value === "bigint" || typeof value === "boolean")
    return String(value);
  if (value === undefined) return "unset";
  return JSON.stringify(value);
}

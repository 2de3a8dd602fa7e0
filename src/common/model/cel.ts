// CEL requirements and rank over the declared host facts (the `host` of requirements and rank).
// Expressions are type-checked and their cost estimated at submit (cel-cost.ts), compiled once per
// job, evaluated per host under a guard that stops any evaluation after a few milliseconds
// (cel-guard.ts), the evaluation of an expression stored before the cost limit included.

import { type ASTNode, Environment } from "@marcbachmann/cel-js";
import { costProblem } from "./cel-cost.ts";
import { EvaluationLimitError, guardTree, runGuarded } from "./cel-guard.ts";
import type { HostFacts } from "./host-facts.ts";

const HOST_SCHEMA = {
  name: "string",
  pool: "string",
  os: "string",
  arch: "string",
  cpus: "double",
  memoryMb: "double",
  memFreeMb: "double",
  load1: "double",
  cpuFree: "double",
  diskFreeMb: "double",
  speed: "double",
  labels: "map<string, string>",
  slotsFree: "double",
  secondsLeft: "double",
  enforces: "bool",
  shared: "list<string>",
} as const;

export const HOST_FACT_NAMES = Object.keys(HOST_SCHEMA) as (keyof HostFacts)[];

const environment = new Environment({ homogeneousAggregateLiterals: false }).registerVariable({
  name: "host",
  schema: HOST_SCHEMA,
});

export type CelPurpose = "requirements" | "rank";

/**
 * Returns an error message, or null when the expression compiles, has the right type for its
 * purpose and its estimated cost is within the budget (CEL_COST_BUDGET).
 */
export function checkExpression(source: string, purpose: CelPurpose): string | null {
  return expressionProblem(source, purpose)?.message ?? null;
}

/**
 * What is wrong with an expression: it does not compile or has the wrong type (`kind: "cel"`), or
 * its estimated cost is over the budget (`kind: "cost"`, `estimated cost N steps is over the limit
 * of M`). Parsed once; the cost comes first, so that a long expression over the budget is not
 * type-checked as well.
 */
export function expressionProblem(
  source: string,
  purpose: CelPurpose,
): { kind: "cel" | "cost"; message: string } | null {
  const known = CHECKED.get(source);
  if (known) return typeProblem(known.type, purpose);
  return checkedProblem(source, purpose);
}

/** expressionProblem without the expressions kept: a sound one is kept for the next to ask. */
function checkedProblem(
  source: string,
  purpose: CelPurpose,
): { kind: "cel" | "cost"; message: string } | null {
  let parsed: Parsed;
  try {
    parsed = environment.parse(source);
  } catch (error) {
    return { kind: "cel", message: firstLine(error) };
  }
  const cost = costProblem(parsed.ast);
  if (cost) return { kind: "cost", message: cost };
  let result: CheckResult;
  try {
    result = parsed.check() as CheckResult;
  } catch (error) {
    return { kind: "cel", message: firstLine(error) };
  }
  if (!result.valid) return { kind: "cel", message: firstLine(result.error) };
  const type = result.type ?? "dyn";
  keep(source, { parsed, type, guarded: false });
  return typeProblem(type, purpose);
}

/** Whether an expression of this type may serve the purpose. */
function typeProblem(type: string, purpose: CelPurpose): { kind: "cel"; message: string } | null {
  if (purpose === "requirements" && type !== "bool" && type !== "dyn") {
    return { kind: "cel", message: `must be a boolean expression, but it is ${type}` };
  }
  if (purpose === "rank" && !["int", "uint", "double", "dyn"].includes(type)) {
    return { kind: "cel", message: `must be a number, but it is ${type}` };
  }
  return null;
}

type Parsed = ReturnType<typeof environment.parse>;

/**
 * A sound expression (it parses, its cost is within the budget, it type-checks) as parsed and
 * checked, shared by the checks and compilations of the same text: a submit checks its job file's
 * expressions and then compiles them, and jobs of one kind repeat the same ones. Its tree carries
 * no state between evaluations (a compiled expression's refusal is its own), so jobs may share it.
 */
interface Checked {
  readonly parsed: Parsed;
  readonly type: string;
  /** Whether the guard is installed on its tree (once compiled). */
  guarded: boolean;
}

/** The sound expressions kept, by their text; the oldest go first past CHECKED_KEPT. */
const CHECKED = new Map<string, Checked>();
const CHECKED_KEPT = 256;

function keep(source: string, checked: Checked): void {
  CHECKED.set(source, checked);
  if (CHECKED.size > CHECKED_KEPT) {
    const oldest = CHECKED.keys().next().value;
    if (oldest !== undefined) CHECKED.delete(oldest);
  }
}

type CheckResult = { valid: boolean; type?: string; error?: { message?: string } };

/** An expression ready to evaluate against a host, with the text it came from and its syntax tree. */
export type CompiledExpression = ((host: HostFacts) => unknown) & {
  readonly source?: string;
  readonly ast?: ASTNode;
};

/**
 * Compiles an expression to evaluate under the guard. One that does not type-check, or whose
 * estimated cost is over the budget (stored before there was one), throws at every evaluation
 * without being evaluated; one that trips the guard (the estimate was wrong) out of steps or size
 * throws the same from then on, so that it costs the event loop its few milliseconds once, not once a host and pass.
 */
export function compileExpression(source: string): CompiledExpression {
  const known = CHECKED.get(source);
  if (!known) return compileChecked(source);
  if (!known.guarded) {
    guardTree(known.parsed.ast);
    known.guarded = true;
  }
  return guardedEvaluation(source, known.parsed, null);
}

/** compileExpression without the expressions kept: a sound one is kept for the next to ask. */
function compileChecked(source: string): CompiledExpression {
  const evaluate = environment.parse(source);
  const ast = evaluate.ast;
  const checked = evaluate.check() as CheckResult;
  let refusal: Error | null = checked.valid ? null : new Error(firstLine(checked.error));
  if (!refusal) {
    const problem = costProblem(ast);
    if (problem) refusal = new EvaluationLimitError(problem);
  }
  // The type check has set what each node evaluates to: the guard wraps that.
  if (!refusal) {
    guardTree(ast);
    keep(source, { parsed: evaluate, type: checked.type ?? "dyn", guarded: true });
  }
  return guardedEvaluation(source, evaluate, refusal);
}

/** The evaluation of a parsed (and, when sound, guarded) expression; `refusal`: why it never runs. */
function guardedEvaluation(source: string, evaluate: Parsed, refused: Error | null): CompiledExpression {
  let refusal = refused;
  const guarded = (host: HostFacts) => {
    if (refusal) throw refusal;
    try {
      return runGuarded(() => evaluate({ host }));
    } catch (error) {
      // Out of steps or size depends only on the expression and the host's facts; out of time may be
      // the machine's doing (a busy core, code not yet optimised), so it fails this evaluation only.
      if (error instanceof EvaluationLimitError && !error.outOfTime) refusal = error;
      throw error;
    }
  };
  return Object.assign(guarded, { source, ast: evaluate.ast });
}

export type RequirementResult = { ok: true } | { ok: false; reason: string };

/** A host matches when the expression is true. An evaluation error (a missing label, say) means no match. */
export function evaluateRequirement(expression: CompiledExpression, host: HostFacts): RequirementResult {
  try {
    const value = expression(host);
    return value === true ? { ok: true } : { ok: false, reason: "requirements are false on this host" };
  } catch (error) {
    return { ok: false, reason: `requirements cannot be evaluated: ${firstLine(error)}` };
  }
}

/** Rank as a plain number; an error or a non-number ranks lowest. */
export function evaluateRank(expression: CompiledExpression, host: HostFacts): number {
  try {
    return evaluateNumber(expression(host));
  } catch {
    return Number.NEGATIVE_INFINITY;
  }
}

function evaluateNumber(value: unknown): number {
  if (typeof value === "bigint") return Number(value);
  if (typeof value === "number" && Number.isFinite(value)) return value;
  // cel-js gives uint values as an object holding the number.
  if (value && typeof value === "object" && "value" in value) return evaluateNumber(value.value);
  return Number.NEGATIVE_INFINITY;
}

export function firstLine(error: unknown): string {
  const message =
    error && typeof error === "object" && "message" in error ? String(error.message) : String(error);
  return message.split("\n")[0].trim();
}

/**
 * Runs the parser, the type check, the estimate and a guarded evaluation over an expression of
 * some size a few times, for a server to call before it listens: the first submit of a long
 * expression otherwise pays for compiling that code, some 100 ms of the event loop here.
 */
export function warmUpExpressions(host: HostFacts): void {
  const list = `[${Array.from({ length: 200 }, (_, i) => i).join(", ")}]`;
  const source = `${list}.exists(a, a < 0) || host.labels.exists(k, k.startsWith("x")) || host.name.matches("^n[0-9]+$") && host.speed * 2.0 > 1.0`;
  // Past the expressions kept: each round parses and checks again, as a new text would.
  for (let round = 0; round < 5; round++) {
    checkedProblem(source, "requirements");
    evaluateRequirement(compileChecked(source), host);
  }
}

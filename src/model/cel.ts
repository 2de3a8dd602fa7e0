// CEL requirements and rank over the declared host facts (DESIGN.md "Host facts").
// Expressions are type-checked at submit, compiled once per job, evaluated per host.

import { type ASTNode, Environment } from "@marcbachmann/cel-js";
import type { HostFacts } from "./records.ts";

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
} as const;

export const HOST_FACT_NAMES = Object.keys(HOST_SCHEMA) as (keyof HostFacts)[];

const environment = new Environment({ homogeneousAggregateLiterals: false }).registerVariable({
  name: "host",
  schema: HOST_SCHEMA,
});

export type CelPurpose = "requirements" | "rank";

/** Returns an error message, or null when the expression compiles and has the right type for its purpose. */
export function checkExpression(source: string, purpose: CelPurpose): string | null {
  let result: { valid: boolean; type?: string; error?: { message?: string } };
  try {
    result = environment.check(source) as typeof result;
  } catch (error) {
    return firstLine(error);
  }
  if (!result.valid) return firstLine(result.error);
  const type = result.type ?? "dyn";
  if (purpose === "requirements" && type !== "bool" && type !== "dyn") {
    return `must be a boolean expression, but it is ${type}`;
  }
  if (purpose === "rank" && !["int", "uint", "double", "dyn"].includes(type)) {
    return `must be a number, but it is ${type}`;
  }
  return null;
}

/** An expression ready to evaluate against a host, with the text it came from and its syntax tree. */
export type CompiledExpression = ((host: HostFacts) => unknown) & {
  readonly source?: string;
  readonly ast?: ASTNode;
};

export function compileExpression(source: string): CompiledExpression {
  const evaluate = environment.parse(source);
  return Object.assign((host: HostFacts) => evaluate({ host }), { source, ast: evaluate.ast });
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

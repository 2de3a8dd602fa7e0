// What every benchmark module exports, and the helpers they share: progress on stderr (stdout
// carries only the final JSON), timing, and merging of the figures into one document.

import { readFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { fileURLToPath } from "node:url";

export const REPOSITORY = resolve(dirname(fileURLToPath(import.meta.url)), "..");

export type Figures = { [key: string]: unknown };

export interface BenchOptions {
  /** Write V8 CPU profiles of the Steward children and summarise them on stderr. */
  cpuProf: boolean;
  /** Keep the data folders (and profiles) of the Steward children instead of removing them. */
  keep: boolean;
}

export interface BenchContext {
  options: BenchOptions;
  /** The figures gathered so far in this run (the benchmarks named in `needs` have run). */
  results: Figures;
  progress(message: string): void;
}

export interface Benchmark {
  /** The name `--only` takes. */
  name: string;
  description: string;
  /** Benchmarks that must run first in the same run (their figures feed this one's). */
  needs?: string[];
  /** Returns figures to merge into the document, e.g. `{ submit: { bulkArray10k: {...} } }`. */
  run(context: BenchContext): Promise<Figures>;
}

export function progress(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 23)}] ${message}\n`);
}

/** Milliseconds since an origin taken with `performance.now()`. */
export function since(start: number): number {
  return performance.now() - start;
}

/** Rounds for the report: figures are measurements, not exact values. */
export function round(value: number, digits = 1): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}

export function percentile(sorted: number[], fraction: number): number {
  if (sorted.length === 0) return Number.NaN;
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1));
  return sorted[index];
}

export function median(values: number[]): number {
  return percentile(
    [...values].sort((a, b) => a - b),
    0.5,
  );
}

function isPlainObject(value: unknown): value is Figures {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** Deep-merges `source` into `target` (objects merge, anything else replaces). */
export function mergeFigures(target: Figures, source: Figures): Figures {
  for (const [key, value] of Object.entries(source)) {
    const existing = target[key];
    if (isPlainObject(existing) && isPlainObject(value)) mergeFigures(existing, value);
    else target[key] = value;
  }
  return target;
}

/** Reads `a.b.c` from the figures, or undefined. */
export function figure(results: Figures, path: string): unknown {
  let value: unknown = results;
  for (const key of path.split(".")) {
    if (!isPlainObject(value)) return undefined;
    value = value[key];
  }
  return value;
}

export interface MachineCpu {
  busy: number;
  total: number;
}

/** The machine's CPU time so far, all cores (Linux /proc/stat; null elsewhere). */
export function machineCpu(): MachineCpu | null {
  try {
    const line = readFileSync("/proc/stat", "utf8").split("\n")[0];
    const ticks = line.trim().split(/\s+/).slice(1).map(Number);
    const idle = ticks[3] + (ticks[4] ?? 0);
    const total = ticks.slice(0, 8).reduce((sum, n) => sum + n, 0);
    return { busy: total - idle, total };
  } catch {
    return null;
  }
}

/** How busy the whole machine was between two readings: 1 means every core all the time. */
export function busyFraction(before: MachineCpu | null, after: MachineCpu | null): number | null {
  if (!before || !after || after.total === before.total) return null;
  return round((after.busy - before.busy) / (after.total - before.total), 3);
}

/**
 * Calls `probe` every `intervalMs` until it answers something other than undefined, and returns
 * that; throws after `timeoutMs` with `what` in the message.
 */
export async function pollUntil<T>(
  what: string,
  probe: () => Promise<T | undefined>,
  options: { intervalMs: number; timeoutMs: number },
): Promise<T> {
  const start = performance.now();
  for (;;) {
    const answer = await probe();
    if (answer !== undefined) return answer;
    if (performance.now() - start > options.timeoutMs) {
      throw new Error(`${what}: not reached within ${options.timeoutMs} ms`);
    }
    await new Promise((resolve) => setTimeout(resolve, options.intervalMs));
  }
}

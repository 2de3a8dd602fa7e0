// Summarises a sampled allocation profile (allocation-sampler.ts): the bytes allocated by area and
// by function (self: allocated in that function's own code, builtins it calls included), freed or
// not, and optionally per unit of work (`--per N`: per task, per request).
// A command: node bench/allocation-summary.ts FILE.heapprofile [--top N] [--per N]

import { readFileSync } from "node:fs";
import { area, functionKey } from "./profile-summary.ts";

interface AllocationNode {
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  selfSize: number;
  children: AllocationNode[];
}

export interface AllocationRow {
  key: string;
  bytes: number;
  percent: number;
}

export interface AllocationSummary {
  totalBytes: number;
  byArea: AllocationRow[];
  byFunction: AllocationRow[];
}

function rows(map: Map<string, number>, total: number, top: number): AllocationRow[] {
  return [...map]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, bytes]) => ({ key, bytes, percent: Math.round((bytes / total) * 1000) / 10 }));
}

export function summariseAllocations(head: AllocationNode, top = 25): AllocationSummary {
  const areas = new Map<string, number>();
  const functions = new Map<string, number>();
  let total = 0;
  const stack = [head];
  for (let node = stack.pop(); node; node = stack.pop()) {
    stack.push(...node.children);
    if (node.selfSize === 0) continue;
    total += node.selfSize;
    areas.set(area(node), (areas.get(area(node)) ?? 0) + node.selfSize);
    functions.set(functionKey(node), (functions.get(functionKey(node)) ?? 0) + node.selfSize);
  }
  return { totalBytes: total, byArea: rows(areas, total, top), byFunction: rows(functions, total, top) };
}

export function formatAllocations(title: string, summary: AllocationSummary, per = 1): string {
  const size = (bytes: number) =>
    per === 1 ? `${(bytes / 1e6).toFixed(1).padStart(8)} MB` : `${(bytes / per).toFixed(0).padStart(7)} B`;
  const table = (heading: string, list: AllocationRow[]) =>
    [
      `  ${heading}`,
      ...list.map((row) => `    ${size(row.bytes)} ${row.percent.toFixed(1).padStart(5)} %  ${row.key}`),
    ].join("\n");
  const unit = per === 1 ? "" : ` (${(summary.totalBytes / per).toFixed(0)} B a unit of ${per})`;
  return [
    `${title}: ${(summary.totalBytes / 1e6).toFixed(0)} MB allocated${unit}`,
    table("by area", summary.byArea),
    table("by function (self)", summary.byFunction),
  ].join("\n");
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const option = (name: string, fallback: number) => {
    const at = args.indexOf(name);
    return at >= 0 ? Number(args.splice(at, 2)[1]) : fallback;
  };
  const top = option("--top", 25);
  const per = option("--per", 1);
  if (args.length === 0 || !(per >= 1)) {
    process.stderr.write("usage: node bench/allocation-summary.ts FILE.heapprofile... [--top N] [--per N]\n");
    process.exit(2);
  }
  for (const file of args) {
    const profile = JSON.parse(readFileSync(file, "utf8")) as { head: AllocationNode };
    process.stdout.write(`${formatAllocations(file, summariseAllocations(profile.head, top), per)}\n`);
  }
}

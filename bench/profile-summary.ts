// Summarises a V8 .cpuprofile (from `node --cpu-prof`): where the time went, by area (Steward's own
// files, each package, Node internals, GC, idle) and by function, self and inclusive.
// Also a command: node bench/profile-summary.ts FILE.cpuprofile [--top N]

import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { fileURLToPath } from "node:url";
import { REPOSITORY } from "./benchmark.ts";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface Row {
  key: string;
  ms: number;
  percent: number;
}

export interface ProfileSummary {
  totalMs: number;
  byArea: Row[];
  selfByFunction: Row[];
  /** Inclusive time of Steward's own functions (src/), each counted once per stack. */
  inclusiveBySrcFunction: Row[];
}

function where(url: string): string {
  if (!url) return "";
  if (url.startsWith("file://")) {
    try {
      return relative(REPOSITORY, fileURLToPath(url));
    } catch {
      return url;
    }
  }
  // CommonJS modules are named by their path.
  if (url.startsWith(`${REPOSITORY}/`)) return relative(REPOSITORY, url);
  return url;
}

/** Where a frame's code lives: gc, idle, a native function, a package, a folder of src/, a Node module. */
export function area(node: Pick<ProfileNode, "callFrame">): string {
  const { functionName, url } = node.callFrame;
  if (!url) {
    if (functionName === "(garbage collector)") return "gc";
    if (functionName === "(idle)") return "idle";
    if (functionName === "(program)") return "program (native, outside JS)";
    return `native ${functionName || "(anonymous)"}`;
  }
  const path = where(url);
  const modules = path.lastIndexOf("node_modules/");
  if (modules >= 0) {
    const rest = path.slice(modules + "node_modules/".length).split("/");
    return `package ${rest[0].startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]}`;
  }
  if (path.startsWith("src/")) {
    // A folder of src/: src/agent, src/cli, or one of a group's (src/broker/store, src/common/model).
    const parts = path.split("/");
    const depth = parts[1] === "broker" || parts[1] === "common" ? 3 : 2;
    return `steward ${parts.slice(0, depth).join("/")}`;
  }
  if (path.startsWith("node:")) return `node ${path.split("/").slice(0, 2).join("/")}`;
  return path;
}

/** A frame as `name path:line` (1-based line). */
export function functionKey(node: Pick<ProfileNode, "callFrame">): string {
  const { functionName, url, lineNumber } = node.callFrame;
  const name = functionName || "(anonymous)";
  return url ? `${name} ${where(url)}:${lineNumber + 1}` : name;
}

function rows(map: Map<string, number>, totalMs: number, top: number): Row[] {
  return [...map]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([key, ms]) => ({ key, ms: Math.round(ms), percent: Math.round((ms / totalMs) * 1000) / 10 }));
}

export function summariseProfile(path: string, top = 25): ProfileSummary {
  const profile = JSON.parse(readFileSync(path, "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  // timeDeltas[i] is the time between sample i-1 and sample i: charge it to sample i-1.
  const selfUs = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const delta = profile.timeDeltas[i + 1] ?? 0;
    selfUs.set(profile.samples[i], (selfUs.get(profile.samples[i]) ?? 0) + delta);
  }
  const totalMs = [...selfUs.values()].reduce((sum, us) => sum + us, 0) / 1000;

  const areas = new Map<string, number>();
  const functions = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const node = byId.get(id)!;
    areas.set(area(node), (areas.get(area(node)) ?? 0) + us / 1000);
    functions.set(functionKey(node), (functions.get(functionKey(node)) ?? 0) + us / 1000);
  }

  // Inclusive: walk the tree keeping the Steward functions on the current stack, once each.
  const inclusive = new Map<string, number>();
  const childIds = new Set(profile.nodes.flatMap((node) => node.children ?? []));
  const onStack = new Map<string, number>();
  const visit = (node: ProfileNode): void => {
    const key = functionKey(node);
    const ours = where(node.callFrame.url).startsWith("src/");
    if (ours) onStack.set(key, (onStack.get(key) ?? 0) + 1);
    const us = selfUs.get(node.id) ?? 0;
    if (us > 0) for (const k of onStack.keys()) inclusive.set(k, (inclusive.get(k) ?? 0) + us / 1000);
    for (const child of node.children ?? []) visit(byId.get(child)!);
    if (ours) {
      const count = onStack.get(key)! - 1;
      if (count === 0) onStack.delete(key);
      else onStack.set(key, count);
    }
  };
  for (const node of profile.nodes) if (!childIds.has(node.id)) visit(node);

  return {
    totalMs: Math.round(totalMs),
    byArea: rows(areas, totalMs, top),
    selfByFunction: rows(functions, totalMs, top),
    inclusiveBySrcFunction: rows(inclusive, totalMs, top),
  };
}

export function formatSummary(title: string, summary: ProfileSummary): string {
  const table = (heading: string, list: Row[]) =>
    [
      `  ${heading}`,
      ...list.map(
        (row) => `    ${String(row.ms).padStart(7)} ms ${row.percent.toFixed(1).padStart(5)} %  ${row.key}`,
      ),
    ].join("\n");
  return [
    `${title}: ${summary.totalMs} ms sampled`,
    table("by area (self time)", summary.byArea),
    table("by function (self time)", summary.selfByFunction),
    table("Steward functions (inclusive time)", summary.inclusiveBySrcFunction),
  ].join("\n");
}

if (import.meta.main) {
  const args = process.argv.slice(2);
  const topIndex = args.indexOf("--top");
  const top = topIndex >= 0 ? Number(args.splice(topIndex, 2)[1]) : 25;
  if (args.length === 0) {
    process.stderr.write("usage: node bench/profile-summary.ts FILE.cpuprofile... [--top N]\n");
    process.exit(2);
  }
  for (const file of args) process.stdout.write(`${formatSummary(file, summariseProfile(file, top))}\n`);
}

// The import rules of docs/architecture.md ("Import rules"), checked: every import between the
// folders of src/ (src/<folder>) that a rule does not allow fails here, and so does a cycle between
// folders. The imports the rules do not allow yet are listed below as known exceptions, each with
// what it waits for; an exception that is no longer needed fails too, so that the list only
// shortens. Imports are read by TypeScript's own pre-processor (static, type-only, re-exports and
// dynamic `import()` alike).

import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const SRC = join(ROOT, "src");

/** Which folders each folder of src/ may import (besides itself); the layers, bottom first. */
const RULES: Record<string, readonly string[]> = {
  model: [],
  sdk: [],
  threads: [],
  transport: [],
  drivers: [],
  protocol: ["model"],
  scheduler: ["model"],
  store: ["model", "threads"],
  state: ["model", "scheduler", "store"],
  planner: ["model", "scheduler", "state"],
  reactor: ["model", "protocol", "scheduler", "state", "store", "planner"],
  pools: ["model", "scheduler", "state", "drivers"],
  backup: ["store"],
  agent: ["model", "protocol", "transport"],
  api: ["model", "protocol", "scheduler", "state", "store", "reactor", "pools", "backup"],
  server: [
    "model",
    "protocol",
    "scheduler",
    "store",
    "state",
    "planner",
    "reactor",
    "pools",
    "drivers",
    "backup",
    "api",
  ],
  cli: [
    "model",
    "protocol",
    "transport",
    "scheduler",
    "store",
    "state",
    "pools",
    "backup",
    "api",
    "server",
    "agent",
  ],
};

/**
 * Imports against the rules that are still there, each to go: the importing folder and the module
 * it imports (relative to src/). A new import against the rules is not added here: it is removed.
 */
const KNOWN_EXCEPTIONS: readonly { from: string; module: string; until: string }[] = [];

/** The folder cycles still there, each made only of known exceptions; to go with them. */
const KNOWN_CYCLES: readonly (readonly string[])[] = [];

interface Import {
  file: string;
  module: string;
  from: string;
  to: string;
}

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { recursive: true, encoding: "utf8" })
    .filter((name) => name.endsWith(".ts"))
    .map((name) => join(folder, name))
    .sort();
}

const topFolder = (path: string) => relative(SRC, path).split("/")[0];

/** Every import of one src/ folder from another. */
function crossFolderImports(): Import[] {
  const imports: Import[] = [];
  for (const file of sourceFiles(SRC)) {
    const info = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    for (const { fileName } of info.importedFiles) {
      if (!fileName.startsWith(".")) continue;
      const target = resolve(dirname(file), fileName);
      const from = topFolder(file);
      const to = topFolder(target);
      if (from !== to) imports.push({ file: relative(SRC, file), module: relative(SRC, target), from, to });
    }
  }
  return imports;
}

/** Strongly connected components of more than one folder (Tarjan), each sorted. */
function cycles(edges: ReadonlyMap<string, ReadonlySet<string>>): string[][] {
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const found: string[][] = [];
  const visit = (node: string) => {
    index.set(node, index.size);
    low.set(node, index.get(node)!);
    stack.push(node);
    onStack.add(node);
    for (const next of edges.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next);
        low.set(node, Math.min(low.get(node)!, low.get(next)!));
      } else if (onStack.has(next)) low.set(node, Math.min(low.get(node)!, index.get(next)!));
    }
    if (low.get(node) === index.get(node)) {
      const component: string[] = [];
      let member: string;
      do {
        member = stack.pop()!;
        onStack.delete(member);
        component.push(member);
      } while (member !== node);
      if (component.length > 1) found.push(component.sort());
    }
  };
  for (const node of edges.keys()) if (!index.has(node)) visit(node);
  return found.sort((a, b) => a.join().localeCompare(b.join()));
}

function graphOf(pairs: Iterable<{ from: string; to: string }>): Map<string, Set<string>> {
  const edges = new Map<string, Set<string>>();
  for (const { from, to } of pairs) {
    if (!edges.has(from)) edges.set(from, new Set());
    if (!edges.has(to)) edges.set(to, new Set());
    edges.get(from)!.add(to);
  }
  return edges;
}

const isException = (each: Import) =>
  KNOWN_EXCEPTIONS.some((exception) => exception.from === each.from && exception.module === each.module);

describe("import rules", () => {
  const imports = crossFolderImports();

  it("name every folder of src/ (a new folder gets its rule in docs/architecture.md and here)", () => {
    const folders = new Set(sourceFiles(SRC).map(topFolder));
    expect([...folders].filter((folder) => !(folder in RULES))).toStrictEqual([]);
    expect(Object.keys(RULES).filter((folder) => !folders.has(folder))).toStrictEqual([]);
  });

  it("are layers: the rules themselves allow no cycle", () => {
    const allowed = Object.entries(RULES).flatMap(([from, tos]) => tos.map((to) => ({ from, to })));
    expect(cycles(graphOf(allowed))).toStrictEqual([]);
  });

  it("are kept: every import between folders is allowed, or a known exception", () => {
    const broken = imports
      .filter((each) => !RULES[each.from]?.includes(each.to) && !isException(each))
      .map((each) => `src/${each.file} imports src/${each.module}: ${each.from} may not import ${each.to}`);
    expect(broken).toStrictEqual([]);
  });

  it("leave no folder cycle but the known ones", () => {
    expect(cycles(graphOf(imports))).toStrictEqual(KNOWN_CYCLES.map((cycle) => [...cycle].sort()));
  });

  it("list only exceptions still needed (remove one once its imports are gone)", () => {
    const gone = KNOWN_EXCEPTIONS.filter(
      (exception) =>
        !imports.some((each) => each.from === exception.from && each.module === exception.module),
    ).map((exception) => `${exception.from} -> ${exception.module}`);
    expect(gone).toStrictEqual([]);
    for (const exception of KNOWN_EXCEPTIONS)
      expect(RULES[exception.from], `${exception.from} -> ${exception.module}`).not.toContain(
        exception.module.split("/")[0],
      );
  });

  it("are the ones docs/architecture.md writes down", () => {
    const docs = readFileSync(join(ROOT, "docs/architecture.md"), "utf8");
    const start = docs.indexOf("## Import rules");
    expect(start, "docs/architecture.md has a section ## Import rules").toBeGreaterThanOrEqual(0);
    const end = docs.indexOf("\n## ", start + 1);
    const section = docs.slice(start, end === -1 ? undefined : end);
    const written: Record<string, string[]> = {};
    for (const match of section.matchAll(/^\| `(\w+)\/` +\| ([^|]*)\|/gm))
      written[match[1]] = [...match[2].matchAll(/`(\w+)\/`/g)].map((name) => name[1]).sort();
    const rules = Object.fromEntries(Object.entries(RULES).map(([from, tos]) => [from, [...tos].sort()]));
    expect(written).toStrictEqual(rules);
  });
});

// The import rules of docs/architecture.md ("Import rules"), checked: src/ holds the programs and
// what they share (src/broker, src/agent, src/cli, src/daemons, src/entry, src/common); every import
// between two programs that the program rules do not allow fails here, and so does every import
// between the folders of src/ (src/agent, src/cli, src/daemons, src/entry, src/broker/<folder>,
// src/common/<folder>) that a folder rule does not allow, a cycle between folders, a cycle between
// the files of one folder, and a file of the API (src/broker/api/) importing the state, the store
// or the core the server puts together (types too: it is handed ports of plain values). What the rules
// do not allow yet is listed below as known exceptions, each with what it waits for; an exception
// that is no longer needed fails too, so that the lists only shorten. Imports are read by
// TypeScript's own pre-processor (static, type-only, re-exports and dynamic `import()` alike).

import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");
const SRC = join(ROOT, "src");

/** Which programs each program (a folder of src/) may import (besides itself); bottom first. */
const PROGRAM_RULES: Record<string, readonly string[]> = {
  common: [],
  agent: ["common"],
  broker: ["common"],
  cli: ["common"],
  daemons: ["common", "broker", "agent"],
  entry: ["common", "cli", "daemons"],
};

/** The programs whose folders are their sub-folders; the others are one folder each. */
const GROUPS: readonly string[] = ["broker", "common"];

/** Which folders each folder may import (besides itself); the layers, bottom first. */
const RULES: Record<string, readonly string[]> = {
  "common/model": [],
  "common/sdk": [],
  "common/time": [],
  "common/transport": ["common/time"],
  "common/protocol": ["common/model"],
  "common/api": ["common/model", "common/protocol"],
  "common/command-line": [],
  "broker/threads": [],
  "broker/drivers": [],
  "broker/scheduler": ["common/model"],
  "broker/store": ["common/model", "common/time", "broker/threads"],
  "broker/state": ["common/model", "broker/scheduler", "broker/store"],
  "broker/planner": ["common/model", "broker/scheduler", "broker/state"],
  "broker/reactor": [
    "common/model",
    "common/protocol",
    "broker/scheduler",
    "broker/state",
    "broker/store",
    "broker/planner",
  ],
  "broker/pools": ["common/model", "common/time", "broker/scheduler", "broker/state", "broker/drivers"],
  "broker/backup": ["broker/store"],
  agent: ["common/model", "common/protocol", "common/time", "common/transport"],
  "broker/api": [
    "common/model",
    "common/protocol",
    "common/api",
    "common/time",
    "broker/scheduler",
    "broker/reactor",
    "broker/pools",
    "broker/backup",
  ],
  "broker/server": [
    "common/model",
    "common/protocol",
    "common/time",
    "broker/scheduler",
    "broker/store",
    "broker/state",
    "broker/planner",
    "broker/reactor",
    "broker/pools",
    "broker/drivers",
    "broker/backup",
    "broker/api",
  ],
  cli: ["common/model", "common/protocol", "common/transport", "common/api", "common/command-line"],
  daemons: [
    "common/model",
    "common/command-line",
    "broker/scheduler",
    "broker/store",
    "broker/state",
    "broker/pools",
    "broker/backup",
    "broker/api",
    "broker/server",
    "agent",
  ],
  entry: ["common/model", "common/protocol", "common/transport", "common/command-line", "cli", "daemons"],
};

/**
 * Imports against the rules that are still there, each to go: the importing folder and the module
 * it imports (relative to src/). A new import against the rules is not added here: it is removed.
 */
const KNOWN_EXCEPTIONS: readonly { from: string; module: string; until: string }[] = [];

/** The folder cycles still there, each made only of known exceptions; to go with them. */
const KNOWN_CYCLES: readonly (readonly string[])[] = [];

/**
 * The cycles between the files of one folder still there (paths relative to src/), each with what
 * it waits for. A new cycle is not added here: it is broken (the shared piece moves to a file both
 * import).
 */
const KNOWN_FILE_CYCLES: readonly { files: readonly string[]; until: string }[] = [];

/**
 * The API's files (the routes, and what registers and serves them): they are handed ports of plain
 * values (broker/api/ports.ts, broker/reactor/ports.ts), and see neither the state's classes and
 * types, nor the store or the blob store, nor the core the server puts together.
 */
const API = "broker/api/";

/** What no file of the API imports, a type included: folders end with `/`, a file is named whole. */
const HIDDEN_FROM_THE_API: readonly string[] = ["broker/state/", "broker/store/", "broker/server/core.ts"];

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

/** The folder of src/ a path is in: `agent`, `cli`, or a group's, like `broker/store`. */
function folderOf(path: string): string {
  const [top, sub] = relative(SRC, path).split("/");
  return GROUPS.includes(top) ? `${top}/${sub}` : top;
}

/** The program a folder belongs to: `broker/store` to `broker`, `agent` to itself. */
const programOf = (folder: string) => folder.split("/")[0];

/** Every import of one src/ file from another, with the folders of both. */
function allImports(): Import[] {
  const imports: Import[] = [];
  for (const file of sourceFiles(SRC)) {
    const info = ts.preProcessFile(readFileSync(file, "utf8"), true, true);
    for (const { fileName } of info.importedFiles) {
      if (!fileName.startsWith(".")) continue;
      const target = resolve(dirname(file), fileName);
      imports.push({
        file: relative(SRC, file),
        module: relative(SRC, target),
        from: folderOf(file),
        to: folderOf(target),
      });
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

/** A table of docs/architecture.md's section on import rules, from its ### heading to the next. */
function writtenRules(section: string, heading: string): Record<string, string[]> {
  const start = section.indexOf(`### ${heading}`);
  expect(start, `docs/architecture.md has a table under ### ${heading}`).toBeGreaterThanOrEqual(0);
  const end = section.indexOf("\n### ", start + 1);
  const table = section.slice(start, end === -1 ? undefined : end);
  const written: Record<string, string[]> = {};
  for (const match of table.matchAll(/^\| `([\w/-]+)\/` +\| ([^|]*)\|/gm))
    written[match[1]] = [...match[2].matchAll(/`([\w/-]+)\/`/g)].map((name) => name[1]).sort();
  return written;
}

const sorted = (rules: Record<string, readonly string[]>) =>
  Object.fromEntries(Object.entries(rules).map(([from, tos]) => [from, [...tos].sort()]));

describe("import rules", () => {
  const everyImport = allImports();
  const imports = everyImport.filter((each) => each.from !== each.to);
  const inFolder = everyImport.filter((each) => each.from === each.to);
  const apiHiddenImports = everyImport.filter(
    (each) =>
      each.file.startsWith(API) &&
      HIDDEN_FROM_THE_API.some((hidden) =>
        hidden.endsWith("/") ? each.module.startsWith(hidden) : each.module === hidden,
      ),
  );

  it("name every folder of src/ (a new folder gets its rule in docs/architecture.md and here)", () => {
    const folders = new Set(sourceFiles(SRC).map(folderOf));
    expect([...folders].filter((folder) => !(folder in RULES))).toStrictEqual([]);
    expect(Object.keys(RULES).filter((folder) => !folders.has(folder))).toStrictEqual([]);
    const programs = new Set(sourceFiles(SRC).map((file) => programOf(folderOf(file))));
    expect([...programs].sort()).toStrictEqual(Object.keys(PROGRAM_RULES).sort());
  });

  it("are layers: the rules themselves allow no cycle, between programs or between folders", () => {
    const allowed = (rules: Record<string, readonly string[]>) =>
      Object.entries(rules).flatMap(([from, tos]) => tos.map((to) => ({ from, to })));
    expect(cycles(graphOf(allowed(PROGRAM_RULES)))).toStrictEqual([]);
    expect(cycles(graphOf(allowed(RULES)))).toStrictEqual([]);
  });

  it("nest: a folder may import only folders of its own program or of one its program may import", () => {
    const beyond = Object.entries(RULES).flatMap(([from, tos]) =>
      tos
        .filter(
          (to) =>
            programOf(to) !== programOf(from) && !PROGRAM_RULES[programOf(from)].includes(programOf(to)),
        )
        .map((to) => `${from} -> ${to}`),
    );
    expect(beyond).toStrictEqual([]);
  });

  it("are kept between programs: common imports none, agent, broker and cli only common, daemons broker and agent, entry cli and daemons", () => {
    const broken = imports
      .filter((each) => {
        const [from, to] = [programOf(each.from), programOf(each.to)];
        return from !== to && !PROGRAM_RULES[from]?.includes(to) && !isException(each);
      })
      .map(
        (each) =>
          `src/${each.file} imports src/${each.module}: ${programOf(each.from)} may not import ${programOf(each.to)}`,
      );
    expect(broken).toStrictEqual([]);
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

  it("leave no cycle between the files of a folder but the known ones", () => {
    const fileCycles = cycles(graphOf(inFolder.map((each) => ({ from: each.file, to: each.module }))));
    const known = KNOWN_FILE_CYCLES.map((cycle) => [...cycle.files].sort()).sort((a, b) =>
      a.join().localeCompare(b.join()),
    );
    expect(fileCycles).toStrictEqual(known);
  });

  it("hand the API plain values: no file of it imports broker/state, broker/store or broker/server/core.ts, a type included", () => {
    const broken = apiHiddenImports.map(
      (each) =>
        `src/${each.file} imports src/${each.module}: the API sees the ports of broker/api/ports.ts only`,
    );
    expect(broken).toStrictEqual([]);
  });

  it("list only exceptions still needed (remove one once its imports are gone)", () => {
    const gone = KNOWN_EXCEPTIONS.filter(
      (exception) =>
        !imports.some((each) => each.from === exception.from && each.module === exception.module),
    ).map((exception) => `${exception.from} -> ${exception.module}`);
    expect(gone).toStrictEqual([]);
    for (const exception of KNOWN_EXCEPTIONS)
      expect(RULES[exception.from], `${exception.from} -> ${exception.module}`).not.toContain(
        folderOf(join(SRC, exception.module)),
      );
  });

  it("are the ones docs/architecture.md writes down", () => {
    const docs = readFileSync(join(ROOT, "docs/architecture.md"), "utf8");
    const start = docs.indexOf("## Import rules");
    expect(start, "docs/architecture.md has a section ## Import rules").toBeGreaterThanOrEqual(0);
    const end = docs.indexOf("\n## ", start + 1);
    const section = docs.slice(start, end === -1 ? undefined : end);
    expect(writtenRules(section, "Programs")).toStrictEqual(sorted(PROGRAM_RULES));
    expect(writtenRules(section, "Folders")).toStrictEqual(sorted(RULES));
  });
});

// Kept attempt folders, on real files: what a retired folder keeps, what goes, and how a kept one
// becomes the next attempt's folder.

import {
  chmodSync,
  existsSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  BLANK_RECORD,
  emptyForReuse,
  SpareFolders,
  writeInPlace,
} from "../../../../src/agent/attempt/spare-folders.ts";

let work: string;
beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), "steward-spare-"));
  mkdirSync(join(work, "attempts"));
});
afterEach(() => rmSync(work, { recursive: true, force: true }));

/** An ended attempt's folder, as the agent, the supervisor and a job left it. */
function endedFolder(name: string): string {
  const dir = join(work, "attempts", name);
  for (const part of ["run/sub", "checkpoint", "notes"]) mkdirSync(join(dir, part), { recursive: true });
  writeFileSync(join(dir, "start.json"), JSON.stringify({ jobId: name, padding: "x".repeat(200) }));
  writeFileSync(join(dir, "job.sh"), "exec setsid true\n");
  writeFileSync(join(dir, "pid"), "4242\n1234567\n");
  writeFileSync(join(dir, "exit"), "0\n");
  writeFileSync(join(dir, "stdout"), "out\n");
  writeFileSync(join(dir, "stderr"), "");
  writeFileSync(join(dir, "stop"), "{}");
  writeFileSync(join(dir, "run", "sub", "result.txt"), "r");
  writeFileSync(join(dir, "checkpoint", "state"), "s");
  writeFileSync(join(dir, "notes", "progress"), "0.5");
  return dir;
}

describe("writeInPlace", () => {
  it.each([
    ["makes a file that is not there", null, "new\n"],
    ["writes over a longer one, down to the new length", "a much longer content\n", "short\n"],
    ["writes over a shorter one", "s\n", "a longer content now\n"],
  ])("%s", (_, before, content) => {
    const path = join(work, "file");
    if (before !== null) writeFileSync(path, before);
    const inode = before === null ? null : statSync(path).ino;
    writeInPlace(path, content);
    expect(readFileSync(path, "utf8")).toBe(content);
    if (inode !== null) expect(statSync(path).ino).toBe(inode);
    if (before === null) expect(statSync(path).mode & 0o777).toBe(0o600);
  });
});

describe("emptyForReuse", () => {
  it("keeps start.json, job.sh, pid and exit (the same files, pid and exit blank) and removes the rest", () => {
    const dir = endedFolder("j1.0.1");
    const inodes = Object.fromEntries(
      ["start.json", "job.sh", "pid", "exit"].map((f) => [f, statSync(join(dir, f)).ino]),
    );
    emptyForReuse(dir);
    expect(readdirSync(dir).sort()).toEqual(["exit", "job.sh", "pid", "start.json"]);
    for (const [file, inode] of Object.entries(inodes)) expect(statSync(join(dir, file)).ino).toBe(inode);
    expect(readFileSync(join(dir, "pid"), "utf8")).toBe(BLANK_RECORD);
    expect(readFileSync(join(dir, "exit"), "utf8")).toBe(BLANK_RECORD);
  });

  it("removes a kept name that a job swapped for a link or a folder, and writes a new exit over a hard link", () => {
    const dir = endedFolder("j1.0.1");
    const victim = join(work, "victim");
    writeFileSync(victim, "intact\n");
    rmSync(join(dir, "pid"));
    symlinkSync(victim, join(dir, "pid"));
    rmSync(join(dir, "exit"));
    linkSync(victim, join(dir, "exit"));
    rmSync(join(dir, "job.sh"));
    mkdirSync(join(dir, "job.sh"));
    emptyForReuse(dir);
    // pid (a link) and job.sh (a folder) are gone; exit (a hard link) is a new blank file.
    expect(readdirSync(dir).sort()).toEqual(["exit", "start.json"]);
    expect(readFileSync(join(dir, "exit"), "utf8")).toBe(BLANK_RECORD);
    expect(statSync(join(dir, "exit")).nlink).toBe(1);
    expect(readFileSync(victim, "utf8")).toBe("intact\n");
  });
});

describe("emptyForReuse, nothing of the last job left (its cgroup seen empty)", () => {
  /** An ended short task's folder: its parts made as the agent makes them, empty. */
  function emptyPartsFolder(name: string): string {
    const dir = join(work, "attempts", name);
    for (const part of ["run", "checkpoint"]) mkdirSync(join(dir, part), { recursive: true, mode: 0o700 });
    for (const file of ["start.json", "pid", "exit"]) writeFileSync(join(dir, file), "x\n");
    for (const log of ["stdout", "stderr"]) writeFileSync(join(dir, log), "", { mode: 0o600 });
    return dir;
  }

  it("keeps run/, checkpoint/, stdout and stderr while empty (the same folders and files)", () => {
    const dir = emptyPartsFolder("j1.0.1");
    const inodes = Object.fromEntries(
      ["run", "checkpoint", "stdout", "stderr"].map((part) => [part, statSync(join(dir, part)).ino]),
    );
    emptyForReuse(dir, true);
    expect(readdirSync(dir).sort()).toEqual([
      "checkpoint",
      "exit",
      "pid",
      "run",
      "start.json",
      "stderr",
      "stdout",
    ]);
    for (const [part, inode] of Object.entries(inodes)) expect(statSync(join(dir, part)).ino).toBe(inode);
    // Without the word that nothing is left, they go as before.
    emptyForReuse(dir);
    expect(readdirSync(dir).sort()).toEqual(["exit", "pid", "start.json"]);
  });

  it.each([
    ["a folder with something in it", (dir: string) => writeFileSync(join(dir, "run", "out.txt"), "r")],
    ["a log with something in it", (dir: string) => writeFileSync(join(dir, "stdout"), "out\n")],
    ["a folder opened to others", (dir: string) => chmodSync(join(dir, "checkpoint"), 0o777)],
    ["a log opened to others", (dir: string) => chmodSync(join(dir, "stderr"), 0o644)],
    [
      "a link in a part's place",
      (dir: string) => {
        rmSync(join(dir, "run"), { recursive: true });
        symlinkSync(work, join(dir, "run"));
      },
    ],
    ["a log with another link", (dir: string) => linkSync(join(dir, "stdout"), join(work, "elsewhere"))],
  ])("removes the part that is not an empty one of its own: %s", (_what, change) => {
    const dir = emptyPartsFolder("j1.0.1");
    change(dir);
    emptyForReuse(dir, true);
    expect(readdirSync(dir)).toHaveLength(6);
    // What a link pointed at is left alone.
    expect(existsSync(join(work, "attempts", "j1.0.1"))).toBe(true);
  });
});

describe("SpareFolders", () => {
  it("retires a folder out of attempts/ and reuses it for the next attempt, its start.json the new one", () => {
    const spares = new SpareFolders(work);
    spares.load();
    const ended = endedFolder("j1.0.1");
    const startInode = statSync(join(ended, "start.json")).ino;
    spares.retire(ended);
    expect(existsSync(ended)).toBe(false);
    expect(readdirSync(join(work, "attempts"))).toEqual([]);
    expect(spares.size).toBe(1);
    const next = join(work, "attempts", "j2.5.1");
    expect(spares.reuseAs(next, '{"jobId":"j2"}')).toBe(true);
    expect(readFileSync(join(next, "start.json"), "utf8")).toBe('{"jobId":"j2"}');
    expect(statSync(join(next, "start.json")).ino).toBe(startInode);
    expect(readdirSync(next).sort()).toEqual(["exit", "job.sh", "pid", "start.json"]);
    expect(spares.size).toBe(0);
    expect(spares.reuseAs(join(work, "attempts", "j3.0.1"), "{}")).toBe(false);
  });

  it("removes an ended folder once it keeps as many as it may", () => {
    const spares = new SpareFolders(work, 1);
    spares.load();
    spares.retire(endedFolder("j1.0.1"));
    spares.retire(endedFolder("j1.1.1"));
    expect(spares.size).toBe(1);
    expect(readdirSync(join(work, "spare"))).toHaveLength(1);
    expect(readdirSync(join(work, "attempts"))).toEqual([]);
  });

  it("takes up the folders an earlier run kept, emptied again, and no more than it may keep", () => {
    mkdirSync(join(work, "spare"));
    for (const name of ["a", "b", "c"]) {
      const dir = endedFolder(name);
      // An agent that stopped while it emptied them.
      renameSync(dir, join(work, "spare", name));
    }
    writeFileSync(join(work, "spare", "stray-file"), "");
    const spares = new SpareFolders(work, 2);
    spares.load();
    expect(spares.size).toBe(2);
    const left = readdirSync(join(work, "spare")).sort();
    expect(left).toHaveLength(2);
    for (const name of left)
      expect(readdirSync(join(work, "spare", name)).sort()).toEqual(["exit", "job.sh", "pid", "start.json"]);
  });
});

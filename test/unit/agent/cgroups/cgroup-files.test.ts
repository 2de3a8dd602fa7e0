// The agent's open cgroup files (src/agent/cgroups/cgroup-files.ts), on plain files in a temporary folder
// (the kernel's own cgroup files are read through it in test/integration/spare-cgroups.test.ts):
// a read answers the file's text as it is now, a long one whole; a missing file reads null and
// cannot be written; the files under a removed cgroup's folders are closed; past its limit every
// file is closed before another opens.

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { CgroupFiles } from "../../../../src/agent/cgroups/cgroup-files.ts";
import { cleanup, tempDir } from "../../../helpers/steward.ts";

const work = tempDir("steward-cgroup-files-");
afterAll(() => cleanup(work));

describe("CgroupFiles", () => {
  it("reads a file's text as it is at each read, through one open file", () => {
    const files = new CgroupFiles();
    const path = join(work, "usage");
    writeFileSync(path, "100\n");
    expect(files.read(path)).toBe("100\n");
    writeFileSync(path, "250\n");
    expect(files.read(path)).toBe("250\n");
    expect(files.size).toBe(1);
  });

  it("never keeps cgroup.procs open (v1 answers an open file's first list of pids again)", () => {
    const files = new CgroupFiles();
    mkdirSync(join(work, "c"), { recursive: true });
    const path = join(work, "c", "cgroup.procs");
    writeFileSync(path, "12\n");
    expect(files.read(path)).toBe("12\n");
    expect(files.size).toBe(0);
  });

  it("reads a long file whole", () => {
    const files = new CgroupFiles();
    const path = join(work, "procs");
    const text = Array.from({ length: 20_000 }, (_, i) => `${100_000 + i}\n`).join("");
    writeFileSync(path, text);
    expect(text.length).toBeGreaterThan(64 * 1024);
    expect(files.read(path)).toBe(text);
  });

  it("answers null for a missing file, and throws writing one", () => {
    const files = new CgroupFiles();
    expect(files.read(join(work, "missing"))).toBeNull();
    expect(() => files.write(join(work, "missing"), "1")).toThrow(/ENOENT/);
    expect(files.size).toBe(0);
  });

  it("writes a value at the file's start", () => {
    const files = new CgroupFiles();
    const path = join(work, "limit");
    writeFileSync(path, "");
    files.write(path, "1048576");
    expect(readFileSync(path, "utf8")).toBe("1048576");
  });

  it("closes the files under folders being removed, and all of them past its limit", () => {
    const files = new CgroupFiles(3);
    for (const name of ["a", "b"]) {
      mkdirSync(join(work, name), { recursive: true });
      writeFileSync(join(work, name, "x"), name);
      writeFileSync(join(work, name, "y"), name);
    }
    files.read(join(work, "a", "x"));
    files.read(join(work, "a", "y"));
    files.read(join(work, "b", "x"));
    expect(files.size).toBe(3);
    files.closeUnder([join(work, "a")]);
    expect(files.size).toBe(1);
    files.read(join(work, "a", "x"));
    files.read(join(work, "a", "y"));
    expect(files.size).toBe(3);
    // A fourth: the three are closed first.
    expect(files.read(join(work, "b", "y"))).toBe("b");
    expect(files.size).toBe(1);
  });
});

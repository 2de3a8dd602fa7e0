// `steward run --stdout FILE --stderr FILE`: which flags go together, and the files as written.

import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { OutputFiles, outputFilesConflict } from "../../../src/cli/output-files.ts";
import { CliError } from "../../../src/common/command-line/cli-error.ts";

const dir = mkdtempSync(join(tmpdir(), "steward-output-files-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("outputFilesConflict", () => {
  it("refuses --stdout and --stderr with --detach, naming them", () => {
    expect(outputFilesConflict({ stdout: "a" }, true)).toMatch(/^--stdout is written by run as it follows/);
    expect(outputFilesConflict({ stdout: "a", stderr: "b" }, true)).toMatch(/^--stdout and --stderr are/);
    expect(outputFilesConflict({ stderr: "b" }, true)).toContain("steward logs ID > FILE");
  });

  it("takes them without --detach, and --detach without them", () => {
    expect(outputFilesConflict({ stdout: "a", stderr: "b" }, false)).toBeNull();
    expect(outputFilesConflict({}, true)).toBeNull();
  });
});

describe("OutputFiles", () => {
  it("writes each stream's chunks to its file, emptying it first", () => {
    const out = join(dir, "out.txt");
    const err = join(dir, "err.txt");
    writeFileSync(out, "left from before\n");
    const files = OutputFiles.open({ stdout: out, stderr: err });
    files.write("stdout", "one\n");
    files.write("stderr", new TextEncoder().encode("oops\n"));
    files.write("stdout", "two\n");
    files.close();
    expect(readFileSync(out, "utf8")).toBe("one\ntwo\n");
    expect(readFileSync(err, "utf8")).toBe("oops\n");
  });

  it("one file for both streams when they name the same path, in the order written", () => {
    const both = join(dir, "both.txt");
    const files = OutputFiles.open({ stdout: both, stderr: join(dir, ".", "both.txt") });
    files.write("stdout", "a\n");
    files.write("stderr", "b\n");
    files.write("stdout", "c\n");
    files.close();
    expect(readFileSync(both, "utf8")).toBe("a\nb\nc\n");
  });

  it("a stream without a file is not written", () => {
    const out = join(dir, "only-out.txt");
    const files = OutputFiles.open({ stdout: out });
    files.write("stderr", "nowhere\n");
    files.close();
    expect(readFileSync(out, "utf8")).toBe("");
  });

  it("a file that cannot be opened is refused with exit 2, naming the flag and the path", () => {
    const missing = join(dir, "no-such-folder", "out.txt");
    const opening = () => OutputFiles.open({ stdout: join(dir, "fine.txt"), stderr: missing });
    expect(opening).toThrow(CliError);
    expect(opening).toThrow(`--stderr ${missing}: ENOENT`);
    try {
      opening();
    } catch (error) {
      expect((error as CliError).exitCode).toBe(2);
    }
  });
});

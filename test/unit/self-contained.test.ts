// The repository stands alone: no tracked file points at a file outside it (a design folder beside
// the checkout, notes kept elsewhere), which a reader of the repository could not open.

import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "../..");
const THIS_FILE = relative(ROOT, import.meta.filename);
/** Written in pieces, so that this file does not name them itself. */
const OUTSIDE = [
  ["..", "shared"].join("/"),
  ["shared", "DESIGN"].join("/"),
  "DESIGN" + ".md",
  "SEEDS" + ".md",
];

describe("the repository", () => {
  it("names no file outside it", () => {
    const tracked = execFileSync("git", ["ls-files", "-z"], { cwd: ROOT, encoding: "utf8" })
      .split("\0")
      .filter((path) => path && path !== THIS_FILE);
    expect(tracked.length).toBeGreaterThan(100);
    const offending: string[] = [];
    for (const path of tracked) {
      let text: string;
      try {
        text = readFileSync(join(ROOT, path), "utf8");
      } catch {
        continue; // a tracked file deleted in the working tree, or a link to a folder
      }
      text.split("\n").forEach((line, index) => {
        const named = OUTSIDE.filter((name) => line.includes(name));
        if (named.length > 0) offending.push(`${path}:${index + 1} names ${named.join(", ")}`);
      });
    }
    expect(offending, `files naming a file outside the repository:\n${offending.join("\n")}`).toEqual([]);
  });
});

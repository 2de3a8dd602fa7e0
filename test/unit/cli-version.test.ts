// `steward --version` (and -V) prints package.json's version, the one place it is written.

import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT, STEWARD } from "../helpers/steward.ts";

describe("steward --version", () => {
  it("prints package.json's version", () => {
    const { version } = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { version: string };
    expect(version).toMatch(/^\d+\.\d+\.\d+/);
    expect(execFileSync(STEWARD, ["--version"], { encoding: "utf8" })).toBe(`${version}\n`);
    expect(execFileSync(STEWARD, ["-V"], { encoding: "utf8" })).toBe(`${version}\n`);
  });
});

// The lowest uid an agent runs jobs as: UID_MIN read from login.defs text as shadow's tools read
// it, the file's absence, and --run-as-min-uid over both.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { describeUidLimit, parseUidMin, uidLimit } from "../../../../src/agent/accounts/uid-min.ts";
import { cleanup, tempDir } from "../../../helpers/steward.ts";

describe("parseUidMin", () => {
  it.each([
    ["Debian's layout", "MAIL_DIR        /var/mail\nUID_MIN\t\t\t 1000\nUID_MAX\t\t\t60000\n", 1000],
    ["spaces before the name", "   UID_MIN 500\n", 500],
    ["trailing blanks", "UID_MIN 500 \t\n", 500],
    ["CRLF line ends", "UID_MIN 500\r\nUID_MAX 60000\r\n", 500],
    ["in double quotes", 'UID_MIN "2000"\n', 2000],
    ["hexadecimal", "UID_MIN 0x3e8\n", 1000],
    ["octal", "UID_MIN 01750\n", 1000],
    ["zero", "UID_MIN 0\n", 0],
    ["the last line decides", "UID_MIN 1000\nUID_MIN 5000\n", 5000],
    ["a later value that is no number leaves the default", "UID_MIN 500\nUID_MIN lots\n", null],
    ["commented out", "#UID_MIN 500\n# UID_MIN 600\n", null],
    ["a comment after the value is no number", "UID_MIN 500 # ordinary accounts\n", null],
    ["absent", "UID_MAX 60000\nSYS_UID_MIN 100\n", null],
    ["another name that starts alike", "UID_MINIMUM 10\n", null],
    ["no value", "UID_MIN\n", null],
    ["negative", "UID_MIN -1\n", null],
    ["a fraction", "UID_MIN 1000.5\n", null],
    ["8 is no octal digit", "UID_MIN 0800\n", null],
    ["beyond a uid", "UID_MIN 99999999999\n", null],
    ["empty text", "", null],
  ])("%s", (_what, text, expected) => expect(parseUidMin(text)).toBe(expected));
});

describe("uidLimit", () => {
  const dir = tempDir("steward-uid-min-");
  afterAll(() => cleanup(dir));

  it("is --run-as-min-uid when given, else UID_MIN of the file, else 1000", () => {
    const defs = join(dir, "login.defs");
    writeFileSync(defs, "UID_MIN 2000\n");
    expect(uidLimit(undefined, defs)).toEqual({ min: 2000, source: "login.defs" });
    expect(uidLimit(500, defs)).toEqual({ min: 500, source: "flag" });
    expect(uidLimit(undefined, join(dir, "absent"))).toEqual({ min: 1000, source: "default" });
    writeFileSync(defs, "UID_MAX 60000\n");
    expect(uidLimit(undefined, defs)).toEqual({ min: 1000, source: "default" });
    // A folder where the file should be: unreadable as a file.
    expect(uidLimit(undefined, dir)).toEqual({ min: 1000, source: "default" });
  });
});

describe("describeUidLimit", () => {
  it.each([
    [
      { min: 1000, source: "login.defs" } as const,
      "uid 1000 (UID_MIN in /etc/login.defs; --run-as-min-uid N to change)",
    ],
    [
      { min: 1000, source: "default" } as const,
      "uid 1000 (the default: no UID_MIN read from /etc/login.defs; --run-as-min-uid N to change)",
    ],
    [{ min: 500, source: "flag" } as const, "uid 500 (--run-as-min-uid)"],
  ])("%j", (limit, text) => expect(describeUidLimit(limit)).toBe(text));
});

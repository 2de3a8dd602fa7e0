import { describe, expect, it } from "vitest";
import { logFormatOf, textLine } from "../../../src/daemons/logger.ts";

describe("daemon log lines on a terminal", () => {
  const time = Date.UTC(2026, 10, 24, 12, 3, 4, 567);
  it.each([
    [
      { level: 30, time, pid: 1, hostname: "h", msg: "agent attached", host: "h1", slots: 4 },
      "12:03:04.567 INFO  agent attached host=h1 slots=4\n",
    ],
    [
      {
        level: 40,
        time,
        msg: "pilot not submitted",
        pool: "hpc",
        reason: "sbatch: error: invalid partition",
      },
      '12:03:04.567 WARN  pilot not submitted pool=hpc reason="sbatch: error: invalid partition"\n',
    ],
    [
      {
        level: 50,
        time,
        msg: "report not applied",
        err: { type: "Error", message: "disk full", stack: "..." },
      },
      "12:03:04.567 ERROR report not applied error: disk full\n",
    ],
    [{ level: 20, time, msg: "x", data: { a: [1, 2] } }, '12:03:04.567 DEBUG x data={"a":[1,2]}\n'],
  ])("%j", (entry, expected) => {
    expect(textLine(JSON.stringify(entry))).toBe(expected);
  });

  it("passes a line that is not JSON through", () => {
    expect(textLine("plain words")).toBe("plain words\n");
  });

  it.each([
    ["json", true, "json"],
    ["text", false, "text"],
    [undefined, true, "text"],
    [undefined, false, "json"],
    ["yaml", true, "text"],
  ] as const)("asked %s on a terminal %s: %s", (asked, terminal, expected) => {
    const saved = process.env.STEWARD_LOG_FORMAT;
    delete process.env.STEWARD_LOG_FORMAT;
    try {
      expect(logFormatOf(asked, terminal)).toBe(expected);
    } finally {
      if (saved !== undefined) process.env.STEWARD_LOG_FORMAT = saved;
    }
  });
});

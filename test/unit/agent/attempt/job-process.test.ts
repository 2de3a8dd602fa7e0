import { spawnSync } from "node:child_process";
import { describe, expect, it } from "vitest";
import {
  bootTimeMs,
  isSameJob,
  PROC_TICKS_PER_SECOND,
  parsePidFile,
  parseProcStat,
  readProcStat,
} from "../../../../src/agent/attempt/job-process.ts";

const tail = (state: string, start: string) =>
  `${state} 1 1 1 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 ${start} 2768896 192 18446744073709551615`;

describe("parseProcStat", () => {
  it.each([
    ["a plain name", `4242 (sleep) ${tail("S", "1234567")}`, { state: "S", startTicks: "1234567" }],
    [
      "a name with spaces and parentheses",
      `77 (a) b (c)) ${tail("R", "99")}`,
      { state: "R", startTicks: "99" },
    ],
    ["a zombie", `5 (true) ${tail("Z", "8")}`, { state: "Z", startTicks: "8" }],
    ["no closing parenthesis", "5 (true S 1 2", null],
    ["cut short before the start time", "5 (true) S 1 1 1", null],
  ])("%s", (_, line, expected) => {
    expect(parseProcStat(line)).toEqual(expected);
  });

  it("reads this process's own start time, the same on every read", () => {
    const first = readProcStat(process.pid);
    expect(first?.state).toMatch(/^[RS]$/);
    expect(readProcStat(process.pid)?.startTicks).toBe(first?.startTicks);
    expect(readProcStat(2 ** 22 + 1)).toBeNull();
  });
});

describe("parsePidFile", () => {
  it.each([
    ["the supervisor's pid alone", "4242\n", { pid: 4242, startTicks: null }],
    ["with the start time the agent added", "4242\n1234567\n", { pid: 4242, startTicks: "1234567" }],
    ["an older supervisor's one line", "4242 1234567\n", { pid: 4242, startTicks: "1234567" }],
    ["an older supervisor that could not read /proc", "4242 \n", { pid: 4242, startTicks: null }],
    ["nothing usable", "\n", { pid: null, startTicks: null }],
  ])("%s", (_, text, expected) => {
    expect(parsePidFile(text)).toEqual(expected);
  });
});

describe("isSameJob", () => {
  const bootMs = 1_700_000_000_000;
  const ticksAt = (ms: number) => String(((ms - bootMs) * PROC_TICKS_PER_SECOND) / 1000);
  const pidWrittenMs = bootMs + 3_600_000;
  it.each([
    ["no process with the pid", null, "500", false],
    ["the job as a zombie", { state: "Z", startTicks: "500" }, "500", false],
    ["the job, start time recorded", { state: "S", startTicks: "500" }, "500", true],
    ["another process, start time recorded", { state: "S", startTicks: "501" }, "500", false],
    [
      "no start recorded: started before the pid was written",
      { state: "S", startTicks: ticksAt(pidWrittenMs - 20) },
      null,
      true,
    ],
    [
      "no start recorded: started as the pid was written",
      { state: "R", startTicks: ticksAt(pidWrittenMs) },
      null,
      true,
    ],
    [
      "no start recorded: started after (a reused pid)",
      { state: "S", startTicks: ticksAt(pidWrittenMs + 30) },
      null,
      false,
    ],
    [
      "no start recorded: a process of a later boot",
      { state: "S", startTicks: ticksAt(pidWrittenMs + 86_400_000) },
      null,
      false,
    ],
  ])("%s", (_, found, recordedStartTicks, expected) => {
    expect(isSameJob(found, { recordedStartTicks, pidWrittenMs, bootMs })).toBe(expected);
  });

  it("takes a process started just now for one that reused a pid written over a second before, not for the job of a pid written now", () => {
    const writtenMs = Date.now();
    const child = spawnSync("sh", ["-c", "cat /proc/$$/stat"], { encoding: "utf8" });
    const found = parseProcStat(child.stdout);
    expect(found).not.toBeNull();
    // Over a second: the boot time is known to the second only.
    expect(
      isSameJob(found, { recordedStartTicks: null, pidWrittenMs: writtenMs - 1100, bootMs: bootTimeMs() }),
    ).toBe(false);
    expect(
      isSameJob(found, { recordedStartTicks: null, pidWrittenMs: Date.now(), bootMs: bootTimeMs() }),
    ).toBe(true);
  });
});

// What attempts used: `steward show`'s usage line, `steward acct`'s table and CSV, and its
// --since; the supervisor's `times` of an agent without cgroups; how a multi-node attempt's ranks
// add up.

import { describe, expect, it } from "vitest";
import { cpuTimeFromShellTimes } from "../../../src/agent/attempt/shell-times.ts";
import {
  accountingCsv,
  accountingTable,
  CSV_HEADERS,
  parseSince,
  usageLine,
} from "../../../src/cli/usage-format.ts";
import type { AccountingRow } from "../../../src/common/api/accounting.ts";
import {
  exitSignal,
  exitStatus,
  measuredCpuSeconds,
  sumUsage,
} from "../../../src/common/model/attempt-usage.ts";
import { newGangProgress, rankEnded } from "../../../src/common/model/gang.ts";
import { renderStopReason } from "../../../src/common/model/stop-reasons.ts";

const NOW = Date.parse("2026-11-27T12:00:00Z");
const measured = { wallSeconds: 5.016, userSeconds: 4.8, systemSeconds: 0.134, peakMemoryMb: 12.34 };
const unmeasured = { wallSeconds: 5, userSeconds: null, systemSeconds: null, peakMemoryMb: null };

function row(overrides: Partial<AccountingRow> = {}): AccountingRow {
  return {
    job: "7",
    name: "busy",
    owner: "alice",
    task: 0,
    attempt: 1,
    host: "n1",
    outcome: "succeeded",
    exitCode: 0,
    signal: null,
    startedAt: "2026-11-27T11:00:00.000Z",
    endedAt: "2026-11-27T11:00:05.016Z",
    usage: { ...measured, signal: null },
    ...overrides,
  };
}

describe("parseSince", () => {
  it.each([
    ["7d", NOW - 7 * 86_400_000],
    ["12h", NOW - 12 * 3_600_000],
    ["90m", NOW - 90 * 60_000],
    ["2w", NOW - 14 * 86_400_000],
    ["30", NOW - 30_000],
    ["2026-11-01", Date.parse("2026-11-01T00:00:00Z")],
    ["2026-11-01T08:00:00Z", Date.parse("2026-11-01T08:00:00Z")],
  ])("%s", (text, expected) => {
    expect(parseSince(text, NOW)).toBe(expected);
  });

  it.each([["yesterday"], ["7 days"], ["0d"], ["-1d"], ["2026-13-45"], [""]])("refuses %j", (text) => {
    expect(parseSince(text, NOW)).toBeNull();
  });
});

describe("exit status", () => {
  it.each([
    [0, null, "exit 0"],
    [3, null, "exit 3"],
    [128, null, "exit 128"],
    [137, 9, "signal 9"],
    [143, 15, "signal 15"],
    [null, null, null],
  ])("%j", (code, signal, status) => {
    expect(exitSignal(code)).toBe(signal);
    expect(exitStatus(code)).toBe(status);
  });
});

describe("usageLine", () => {
  it("measured: CPU with user and system, peak memory, wall time, exit", () => {
    expect(usageLine(measured, 0)).toBe(
      "cpu 4.93 s (user 4.80 s, system 0.13 s), peak memory 12.3 MB, wall 5.02 s, exit 0",
    );
  });
  it("an agent without cgroups: the wall time only", () => {
    expect(usageLine(unmeasured, 137)).toBe(
      "cpu not measured, peak memory not measured, wall 5.00 s, signal 9",
    );
  });
  it("nothing reported (a lost host)", () => {
    expect(usageLine(null, null)).toBe("usage not reported, exit unknown");
  });
});

describe("accountingTable", () => {
  it("one aligned line an attempt, a signal shown as such, unmeasured figures as -", () => {
    const text = accountingTable([
      row(),
      row({
        job: "12",
        attempt: 2,
        outcome: "failed",
        exitCode: 137,
        signal: 9,
        usage: { ...unmeasured, signal: 9 },
      }),
      row({ job: "13", outcome: "lost", exitCode: null, usage: null }),
    ]);
    expect(text.split("\n")).toStrictEqual([
      "JOB  TASK  ATTEMPT  NAME  OWNER  HOST  OUTCOME    EXIT   ENDED                 WALL    CPU     PEAK MEM",
      "7    0     1        busy  alice  n1    succeeded  0      2026-11-27 11:00:05Z  5.02 s  4.93 s  12.3 MB",
      "12   0     2        busy  alice  n1    failed     sig 9  2026-11-27 11:00:05Z  5.00 s  -       -",
      "13   0     1        busy  alice  n1    lost       -      2026-11-27 11:00:05Z  -       -       -",
    ]);
  });
});

describe("accountingCsv", () => {
  it("a header, then one line an attempt; empty fields for what was not measured; quoted where needed", () => {
    const text = accountingCsv([
      row(),
      row({
        name: 'a "quoted", name',
        exitCode: 143,
        signal: 15,
        outcome: "cancelled",
        usage: { ...unmeasured, signal: 15 },
      }),
    ]);
    const lines = text.split("\r\n");
    expect(lines[0]).toBe(CSV_HEADERS.join(","));
    expect(lines[0]).toBe(
      "job,task,attempt,owner,host,outcome,exitCode,signal,userSeconds,systemSeconds,peakMemoryMb,wallSeconds,startedAt,endedAt,name,cpuSeconds",
    );
    expect(lines[1]).toBe(
      "7,0,1,alice,n1,succeeded,0,,4.8,0.134,12.34,5.016,2026-11-27T11:00:00.000Z,2026-11-27T11:00:05.016Z,busy,4.934",
    );
    expect(lines[2]).toBe(
      '7,0,1,alice,n1,cancelled,143,15,,,,5,2026-11-27T11:00:00.000Z,2026-11-27T11:00:05.016Z,"a ""quoted"", name",',
    );
    expect(lines[3]).toBe("");
    expect(lines).toHaveLength(4);
  });
});

describe("a multi-node attempt's usage from its ranks", () => {
  it("adds CPU time and peak memory, takes the longest wall time", () => {
    expect(
      sumUsage([
        { wallSeconds: 5, userSeconds: 4, systemSeconds: 1, peakMemoryMb: 100 },
        { wallSeconds: 6, userSeconds: 3, systemSeconds: 0.5, peakMemoryMb: 50 },
      ]),
    ).toStrictEqual({ wallSeconds: 6, userSeconds: 7, systemSeconds: 1.5, peakMemoryMb: 150 });
  });
  it("a figure a rank did not measure is null; a rank that reported nothing makes it null", () => {
    const sum = sumUsage([measured, unmeasured]);
    expect(sum?.userSeconds).toBeNull();
    expect(sum?.wallSeconds).toBe(5.016);
    expect(measuredCpuSeconds(sum)).toBeNull();
    expect(sumUsage([measured, null])).toBeNull();
    expect(sumUsage([])).toBeNull();
  });
});

describe("cpuTimeFromShellTimes: an agent without a cgroup reads the supervisor's `times`", () => {
  it.each([
    ["dash", "0m0.000000s 0m0.000000s\n0m0.280000s 0m0.010000s\n", { userMs: 280, systemMs: 10 }],
    ["bash", "0m0.001s 0m0.000s\n1m2.500s 0m0.250s\n", { userMs: 62_500, systemMs: 250 }],
  ])("%s", (_, text, expected) => {
    const cpu = cpuTimeFromShellTimes(text);
    expect(cpu?.userMs).toBeCloseTo(expected.userMs, 6);
    expect(cpu?.systemMs).toBeCloseTo(expected.systemMs, 6);
  });
  it.each([[""], ["0m0.1s 0m0.2s\n"], ["garbage\nmore garbage\n"], ["0m0s 0m0s\n0m1.0s\n"]])(
    "refuses %j",
    (text) => {
      expect(cpuTimeFromShellTimes(text)).toBeNull();
    },
  );
});

describe("a gang's attempt ends with what its ranks used together", () => {
  it("the end that closes the gang carries the ranks' usage added up, the failing rank's reason kept", () => {
    const gang = newGangProgress(["a", "b"]);
    const first = rankEnded(gang, 1, {
      outcome: "failed",
      exitCode: 1,
      reason: { kind: "text", text: "exit code 1" },
      usage: { wallSeconds: 2, userSeconds: 1, systemSeconds: 0.5, peakMemoryMb: 30 },
    });
    expect(first.attemptEnd).toBeNull();
    const last = rankEnded(gang, 0, {
      outcome: "cancelled",
      exitCode: 143,
      reason: { kind: "text", text: "stopped" },
      usage: { wallSeconds: 3, userSeconds: 2, systemSeconds: 0.25, peakMemoryMb: 40 },
    });
    expect(last.attemptEnd).toStrictEqual({
      outcome: "failed",
      exitCode: 1,
      reason: {
        kind: "rank-ended",
        rank: 1,
        host: "b",
        outcome: "failed",
        reason: { kind: "text", text: "exit code 1" },
      },
      usage: { wallSeconds: 3, userSeconds: 3, systemSeconds: 0.75, peakMemoryMb: 70 },
    });
    expect(renderStopReason(last.attemptEnd!.reason!)).toBe("rank 1 on b: exit code 1");
  });

  it("a rank that reported no usage leaves the attempt's null", () => {
    const gang = newGangProgress(["a", "b"]);
    rankEnded(gang, 0, { outcome: "succeeded", exitCode: 0, reason: null, usage: measured });
    const last = rankEnded(gang, 1, { outcome: "succeeded", exitCode: 0, reason: null });
    expect(last.attemptEnd?.usage).toBeNull();
  });
});

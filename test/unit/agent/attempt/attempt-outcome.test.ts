// How the agent says an attempt ended (src/agent/attempt/attempt-outcome.ts), from its exit code,
// a stop asked of it, the kernel's out-of-memory kills and its outputs.

import { describe, expect, it } from "vitest";
import {
  outcomeOfOutputs,
  outcomeWithoutOutputs,
  outputsNotStaged,
  type StopRequest,
} from "../../../../src/agent/attempt/attempt-outcome.ts";

const UNKNOWN = "the job's supervisor vanished";

describe("outcomeWithoutOutputs", () => {
  const preempted: StopRequest = { outcome: "preempted", reason: "a job of a higher tier" };
  const cases: {
    rule: string;
    exitCode: number | null;
    stop: StopRequest | null;
    oomKills: number;
    expected: ReturnType<typeof outcomeWithoutOutputs>;
  }[] = [
    {
      rule: "a stop asked for is the outcome, whatever the exit (even 0)",
      exitCode: 0,
      stop: preempted,
      oomKills: 0,
      expected: { outcome: "preempted", exitCode: 0, reason: "a job of a higher tier", outputs: [] },
    },
    {
      rule: "a stop asked for wins over the kernel's memory kill",
      exitCode: 137,
      stop: preempted,
      oomKills: 1,
      expected: { outcome: "preempted", exitCode: 137, reason: "a job of a higher tier", outputs: [] },
    },
    {
      rule: "no exit code: lost, with the reason given",
      exitCode: null,
      stop: null,
      oomKills: 0,
      expected: { outcome: "lost", exitCode: null, reason: UNKNOWN, outputs: [] },
    },
    {
      rule: "a non-zero exit with a memory kill: failed for its memory limit",
      exitCode: 137,
      stop: null,
      oomKills: 2,
      expected: {
        outcome: "failed",
        exitCode: 137,
        reason: "out of memory: limit 512 MB reached",
        outputs: [],
        cause: "oom",
      },
    },
    {
      rule: "a non-zero exit from a signal: failed, naming the signal",
      exitCode: 143,
      stop: null,
      oomKills: 0,
      expected: { outcome: "failed", exitCode: 143, reason: "killed by signal 15", outputs: [] },
    },
    {
      rule: "a plain non-zero exit: failed, naming the code",
      exitCode: 3,
      stop: null,
      oomKills: 0,
      expected: { outcome: "failed", exitCode: 3, reason: "exit code 3", outputs: [] },
    },
    {
      rule: "a memory kill with exit 0 (a child killed, the job went on): decided by its outputs",
      exitCode: 0,
      stop: null,
      oomKills: 1,
      expected: null,
    },
    { rule: "exit 0 unasked: decided by its outputs", exitCode: 0, stop: null, oomKills: 0, expected: null },
  ];
  it.each(cases)("$rule", ({ exitCode, stop, oomKills, expected }) => {
    expect(outcomeWithoutOutputs(exitCode, stop, oomKills, 512, UNKNOWN)).toEqual(expected);
  });
});

describe("outcomeOfOutputs", () => {
  it("succeeds with every output uploaded", () => {
    expect(outcomeOfOutputs(["a.txt", "b.txt"], [])).toEqual({
      outcome: "succeeded",
      exitCode: 0,
      reason: null,
      outputs: ["a.txt", "b.txt"],
    });
  });
  it("fails, naming the one output not the job's own", () => {
    expect(outcomeOfOutputs(["a.txt"], ["secret"])).toEqual({
      outcome: "failed",
      exitCode: 0,
      reason: "output file not the job's own, not taken: secret",
      outputs: ["a.txt"],
    });
  });
  it("fails, naming every output not the job's own", () => {
    expect(outcomeOfOutputs([], ["x", "y"]).reason).toBe("output files not the job's own, not taken: x, y");
  });
  it("is lost, to run again, when the outputs could not be uploaded", () => {
    expect(outputsNotStaged(new Error("PUT output a.txt: HTTP 507"))).toEqual({
      outcome: "lost",
      exitCode: 0,
      reason: "staging outputs failed: PUT output a.txt: HTTP 507",
      outputs: [],
      cause: "staging",
    });
  });
});

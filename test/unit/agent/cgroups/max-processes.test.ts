// `resources.maxProcesses`: a whole number of at least 1 in the job file, absent by default (the
// agent then limits an attempt to DEFAULT_MAX_PROCESSES), and carried in the start message only when
// the job names it.

import { afterEach, beforeEach, expect, it } from "vitest";
import { cgroupSettings } from "../../../../src/agent/cgroups/cgroup-limits.ts";
import { DEFAULT_MAX_PROCESSES, validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import { JobFileError } from "../../../../src/common/model/jobfile-error.ts";
import { Harness, hello, settle, submitOn } from "../../../helpers/core-harness.ts";

let harness: Harness;

beforeEach(async () => {
  harness = new Harness();
  await harness.start();
});

afterEach(async () => {
  await harness.close();
});

it("is a whole number of at least 1, absent unless given", () => {
  expect(validateJobSpec({ command: "x", resources: { maxProcesses: 20 } }).resources.maxProcesses).toBe(20);
  expect(validateJobSpec({ command: "x" }).resources).not.toHaveProperty("maxProcesses");
  for (const maxProcesses of [0, 2.5, "20"]) {
    let error: unknown = null;
    try {
      validateJobSpec({ command: "x", resources: { maxProcesses } });
    } catch (thrown) {
      error = thrown;
    }
    expect(error).toBeInstanceOf(JobFileError);
    expect((error as JobFileError).field).toBe("resources.maxProcesses");
  }
});

it("goes in the start message when the job names it; without it the agent's pids limit is 4096", async () => {
  await harness.core.agents.attachHost(hello("h1"));
  const limited = await submitOn(
    harness.core,
    validateJobSpec({ command: "x", resources: { maxProcesses: 20 } }),
    "ann",
  );
  const plain = await submitOn(harness.core, validateJobSpec({ command: "x" }), "ann");
  await settle();
  const starts = Object.fromEntries(harness.starts().map((start) => [start.jobId, start]));
  expect(starts[limited.id].maxProcesses).toBe(20);
  expect(starts[plain.id]).not.toHaveProperty("maxProcesses");
  expect(DEFAULT_MAX_PROCESSES).toBe(4096);
  const pids = (maxProcesses?: number) =>
    cgroupSettings(1, { cpus: 1, maxProcesses }).find((setting) => setting.controller === "pids")?.value;
  expect(pids(starts[plain.id].maxProcesses)).toBe("4096");
  expect(pids(starts[limited.id].maxProcesses)).toBe("20");
});

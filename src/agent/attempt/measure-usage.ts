// What an attempt used, measured at its end: wall time, CPU time, peak memory and the kernel's
// out-of-memory kills, from its cgroup where limits are enforced, else from the supervisor shell's
// `times` (CPU time only).

import { join } from "node:path";
import type { EndedEvent } from "../../common/protocol/messages.ts";
import type { AttemptCgroup } from "../cgroups/attempt-cgroup.ts";
import type { CpuTime } from "../cgroups/cgroup-limits.ts";
import { readJobFileSync } from "../files/job-written-file.ts";
import { cpuTimeFromShellTimes, SHELL_TIMES_MAX_BYTES, TIMES_FILE } from "./shell-times.ts";

export type AttemptUsage = NonNullable<EndedEvent["usage"]>;

/**
 * The CPU time the supervisor's shell counted for the job (no cgroup), or null. Read as a job's
 * file (a regular file only, its start only): a job of the agent's own account can reach it.
 */
function shellTimes(dir: string): CpuTime | null {
  const text = readJobFileSync(join(dir, TIMES_FILE), null, SHELL_TIMES_MAX_BYTES);
  return text === null ? null : cpuTimeFromShellTimes(text);
}

/**
 * What an ended attempt used: its cgroup's counters, or without one the shell's (none when the
 * supervisor vanished: `exitCode` null), its cgroup emptied. `ranMs`: how long its job ran
 * (job-run-time.ts), null when it never started; `dir`: the attempt's folder.
 */
export async function measureAndEnd(
  cgroup: AttemptCgroup | null,
  ranMs: number | null,
  exitCode: number | null,
  dir: string,
): Promise<AttemptUsage> {
  const wallSeconds = ranMs === null ? 0 : ranMs / 1000;
  if (!cgroup) {
    // The supervisor's `times`, written before the exit code: none when the supervisor vanished.
    const cpu = exitCode === null ? null : shellTimes(dir);
    return {
      wallSeconds,
      cpuUserSeconds: cpu === null ? null : cpu.userMs / 1000,
      cpuSystemSeconds: cpu === null ? null : cpu.systemMs / 1000,
      peakMemoryMb: null,
      oomKills: 0,
    };
  }
  // Emptied before the end is reported, so that nothing of the attempt outlives it; the empty
  // cgroup is removed with the folder (cleanup), off the way of the report.
  const oomKills = cgroup.oomKills();
  if (await cgroup.killAll()) cgroup.endMeasured(oomKills);
  const { cpu, peakMemoryBytes } = cgroup.usage();
  return {
    wallSeconds,
    cpuUserSeconds: cpu === null ? null : cpu.userMs / 1000,
    cpuSystemSeconds: cpu === null ? null : cpu.systemMs / 1000,
    peakMemoryMb: peakMemoryBytes === null ? null : peakMemoryBytes / 2 ** 20,
    oomKills,
  };
}

// CPU time without a cgroup: the supervisor's shell prints `times` once the job has exited, and
// its second line is the CPU time of the shell's children, that is the job's process with every
// process it waited for (not those it left running, which the end kills). Peak memory has no such
// figure: it stays unmeasured.

import type { CpuTime } from "../cgroups/cgroup-limits.ts";

/** The file the supervisor writes `times` to, in the attempt folder, when the agent made it empty. */
export const TIMES_FILE = "times";

/** Two lines of `times` are well under this; more is not what the shell wrote. */
export const SHELL_TIMES_MAX_BYTES = 256;

const TIME = /(\d+)m(\d+(?:\.\d+)?)s/g;

/**
 * The children's user and system time from `times` output (dash: `0m0.280000s 0m0.010000s`, bash:
 * `0m0.280s 0m0.010s`, the shell's own on the first line, its children's on the second); null
 * when the text is not that.
 */
export function cpuTimeFromShellTimes(text: string): CpuTime | null {
  const lines = text.split("\n").filter((line) => line.trim() !== "");
  if (lines.length !== 2) return null;
  const figures = [...lines[1].matchAll(TIME)].map((match) => Number(match[1]) * 60 + Number(match[2]));
  if (figures.length !== 2 || figures.some((value) => !Number.isFinite(value))) return null;
  return { userMs: figures[0] * 1000, systemMs: figures[1] * 1000 };
}

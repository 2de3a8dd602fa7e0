// The floor to compare Steward with: the same `true` processes started by xargs, 4 at a time
// (the slots of the end-to-end agent). Run a few times; the median counts.

import { spawn } from "node:child_process";
import { type Benchmark, busyFraction, machineCpu, median, round, since } from "./benchmark.ts";
import { processCpuSeconds } from "./steward-process.ts";

export const XARGS_TASKS = 2000;
export const XARGS_PARALLEL = 4;
const RUNS = 3;

function runXargs(tasks: number, parallel: number): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn("sh", ["-c", `seq ${tasks} | xargs -P ${parallel} -n 1 true`], { stdio: "ignore" });
    child.once("error", reject);
    child.once("exit", (code, signal) => {
      if (code === 0) resolve(since(start) / 1000);
      else reject(new Error(`xargs exited with ${code ?? signal}`));
    });
  });
}

export const xargsBenchmark: Benchmark = {
  name: "xargs",
  description: `${XARGS_TASKS} \`true\` processes by seq | xargs -P ${XARGS_PARALLEL} -n 1 true (median of ${RUNS})`,
  async run({ progress }) {
    const runs: number[] = [];
    const cpuBefore = processCpuSeconds(process.pid);
    const machineBefore = machineCpu();
    for (let i = 0; i < RUNS; i++) runs.push(await runXargs(XARGS_TASKS, XARGS_PARALLEL));
    const cpuAfter = processCpuSeconds(process.pid);
    const machineBusy = busyFraction(machineBefore, machineCpu());
    const seconds = median(runs);
    progress(`xargs: ${XARGS_TASKS} processes in ${runs.map((s) => round(s, 3)).join(", ")} s`);
    return {
      raw: {
        xargsTasksPerSecond: round(XARGS_TASKS / seconds),
        xargs: {
          tasks: XARGS_TASKS,
          parallel: XARGS_PARALLEL,
          seconds: round(seconds, 3),
          runsSeconds: runs.map((s) => round(s, 3)),
          // CPU of xargs and its processes, per run: compare with endToEnd.stewardCpu.
          cpuSecondsPerRun:
            cpuBefore && cpuAfter ? round((cpuAfter.children - cpuBefore.children) / RUNS, 2) : null,
          machineBusyFraction: machineBusy,
        },
      },
    };
  },
};

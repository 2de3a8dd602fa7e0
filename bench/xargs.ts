// The floor to compare Steward with: the same `true` processes started by xargs, 4 at a time
// (the slots of the end-to-end agent), and by GNU parallel beside it when installed (Debian's
// `parallel`; skipped with a message when absent). Runs alternate between the two; the medians count.

import { execFileSync, spawn } from "node:child_process";
import { type Benchmark, busyFraction, type Figures, machineCpu, median, round, since } from "./benchmark.ts";
import { processCpuSeconds } from "./steward-process.ts";

export const XARGS_TASKS = 2000;
export const XARGS_PARALLEL = 4;
const RUNS = 3;

/** The shell pipelines timed: `tasks` runs of `true`, `parallel` at once. */
function xargsCommand(tasks: number, parallel: number): string {
  return `seq ${tasks} | xargs -P ${parallel} -n 1 true`;
}

function gnuParallelCommand(tasks: number, parallel: number): string {
  // --will-cite: no citation notice; each line is one argument to one `true`, as with xargs -n 1.
  return `seq ${tasks} | parallel --will-cite -j ${parallel} true`;
}

/** Seconds `sh -c command` takes; rejects when it fails. */
function timeCommand(command: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const start = performance.now();
    const child = spawn("sh", ["-c", command], { stdio: "ignore" });
    child.once("error", reject);
    child.once("exit", (code, signal) => {
      if (code === 0) resolve(since(start) / 1000);
      else reject(new Error(`${command} exited with ${code ?? signal}`));
    });
  });
}

/** GNU parallel's version line, or null when it is not installed. */
function gnuParallelVersion(): string | null {
  try {
    const out = execFileSync("parallel", ["--version"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    });
    return out.split("\n")[0].startsWith("GNU parallel") ? out.split("\n")[0] : null;
  } catch {
    return null;
  }
}

export const xargsBenchmark: Benchmark = {
  name: "xargs",
  description: `${XARGS_TASKS} \`true\` processes by seq | xargs -P ${XARGS_PARALLEL} -n 1 true, and by GNU parallel -j ${XARGS_PARALLEL} when installed (alternating, median of ${RUNS} each)`,
  async run({ progress }) {
    const parallelVersion = gnuParallelVersion();
    if (!parallelVersion)
      progress("xargs: GNU parallel is not installed (apt-get install parallel); its runs skipped");
    const runs: number[] = [];
    const parallelRuns: number[] = [];
    // CPU of the tools and their processes (as this process's reaped children); null where /proc is not.
    let xargsCpu: number | null = 0;
    let parallelCpu: number | null = 0;
    const machineBefore = machineCpu();
    for (let i = 0; i < RUNS; i++) {
      const before = processCpuSeconds(process.pid);
      runs.push(await timeCommand(xargsCommand(XARGS_TASKS, XARGS_PARALLEL)));
      const between = processCpuSeconds(process.pid);
      if (parallelVersion)
        parallelRuns.push(await timeCommand(gnuParallelCommand(XARGS_TASKS, XARGS_PARALLEL)));
      const after = processCpuSeconds(process.pid);
      if (before && between && after && xargsCpu !== null && parallelCpu !== null) {
        xargsCpu += between.children - before.children;
        parallelCpu += after.children - between.children;
      } else {
        xargsCpu = null;
        parallelCpu = null;
      }
    }
    const machineBusy = busyFraction(machineBefore, machineCpu());
    const seconds = median(runs);
    progress(`xargs: ${XARGS_TASKS} processes in ${runs.map((s) => round(s, 3)).join(", ")} s`);
    const xargsRate = XARGS_TASKS / seconds;
    let parallel: Figures = { skipped: "GNU parallel is not installed" };
    let parallelRate: number | null = null;
    if (parallelVersion) {
      const parallelSeconds = median(parallelRuns);
      parallelRate = XARGS_TASKS / parallelSeconds;
      progress(
        `xargs: GNU parallel ran ${XARGS_TASKS} processes in ${parallelRuns.map((s) => round(s, 3)).join(", ")} s ` +
          `(${round(parallelRate / xargsRate, 3)} of xargs's rate)`,
      );
      parallel = {
        version: parallelVersion,
        tasks: XARGS_TASKS,
        parallel: XARGS_PARALLEL,
        seconds: round(parallelSeconds, 3),
        runsSeconds: parallelRuns.map((s) => round(s, 3)),
        cpuSecondsPerRun: parallelCpu === null ? null : round(parallelCpu / RUNS, 2),
      };
    }
    return {
      raw: {
        xargsTasksPerSecond: round(xargsRate),
        xargs: {
          tasks: XARGS_TASKS,
          parallel: XARGS_PARALLEL,
          seconds: round(seconds, 3),
          runsSeconds: runs.map((s) => round(s, 3)),
          // CPU of xargs and its processes, per run: compare with endToEnd.stewardCpu.
          cpuSecondsPerRun: xargsCpu === null ? null : round(xargsCpu / RUNS, 2),
          // Both tools' runs, alternating.
          machineBusyFraction: machineBusy,
        },
        parallelTasksPerSecond: parallelRate === null ? null : round(parallelRate),
        parallelOverXargs: parallelRate === null ? null : round(parallelRate / xargsRate, 4),
        parallel,
      },
    };
  },
};

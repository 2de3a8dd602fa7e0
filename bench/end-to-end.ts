// End to end: one array job of 2,000 `true` tasks on `steward up` with one agent of 4 slots, timed
// from the submit request to the job reading succeeded, compared with xargs doing the same work.

import { chooseLauncher } from "../src/agent/launcher/launcher.ts";
import type { JobSummary } from "./api.ts";
import { type Benchmark, busyFraction, figure, machineCpu, round, since } from "./benchmark.ts";
import { startSteward } from "./steward-process.ts";
import { XARGS_PARALLEL, XARGS_TASKS } from "./xargs.ts";

const TASKS = XARGS_TASKS;
const SLOTS = XARGS_PARALLEL;
const POLL_MS = 25;
const TIMEOUT_MS = 10 * 60_000;
const ENDED = new Set(["succeeded", "failed", "cancelled"]);

/** One run: the figures of `endToEnd`, with `env` set for the Steward process (STEWARD_LAUNCHER). */
async function measure(
  { options, results, progress }: Parameters<Benchmark["run"]>[0],
  label: string,
  env: Record<string, string> = {},
) {
  const steward = await startSteward({
    label,
    agents: 1,
    slots: SLOTS,
    cpuProf: options.cpuProf,
    keep: options.keep,
    env,
  });
  try {
    const { api } = steward;
    const commitsBefore = await steward.metric("steward_store_commits");
    const cpuBefore = steward.cpuSeconds();
    const machineBefore = machineCpu();
    const start = performance.now();
    const id = await api.submit({ name: "bench-e2e", command: ["true"], array: { count: TASKS } });
    const acceptedMs = since(start);
    let job: JobSummary;
    let firstSucceededMs: number | null = null;
    // When 10 % and 90 % of the tasks had succeeded: the steady rate, without start and tail.
    let tenthMs: number | null = null;
    let ninetiethMs: number | null = null;
    let polls = 0;
    let lastProgress = performance.now();
    for (;;) {
      job = await api.job(id);
      polls++;
      const elapsed = since(start);
      const done = job.counts.succeeded;
      if (firstSucceededMs === null && done > 0) firstSucceededMs = elapsed;
      if (tenthMs === null && done >= TASKS * 0.1) tenthMs = elapsed;
      if (ninetiethMs === null && done >= TASKS * 0.9) ninetiethMs = elapsed;
      if (ENDED.has(job.state)) break;
      if (elapsed > TIMEOUT_MS) throw new Error(`job ${id} still ${job.state} after ${TIMEOUT_MS} ms`);
      if (performance.now() - lastProgress >= 2000) {
        lastProgress = performance.now();
        const c = job.counts;
        progress(
          `end-to-end: ${round(elapsed / 1000)} s: ${c.succeeded} succeeded, ${c.running} running, ${c.pending} pending, ${c.failed} failed`,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, POLL_MS));
    }
    const seconds = since(start) / 1000;
    const cpuAfter = steward.cpuSeconds();
    const machineBusy = busyFraction(machineBefore, machineCpu());
    const commitsAfter = await steward.metric("steward_store_commits");
    if (job.state !== "succeeded") {
      throw new Error(`job ${id} ended ${job.state}: ${JSON.stringify(job.counts)}`);
    }
    const tasksPerSecond = TASKS / seconds;
    progress(`end-to-end: ${TASKS} tasks in ${round(seconds, 3)} s (${round(tasksPerSecond)}/s)`);
    const xargsRate = figure(results, "raw.xargsTasksPerSecond");
    const steady =
      tenthMs !== null && ninetiethMs !== null && ninetiethMs > tenthMs
        ? round((TASKS * 0.8) / ((ninetiethMs - tenthMs) / 1000))
        : null;
    return {
      launcher: chooseLauncher(env.STEWARD_LAUNCHER),
      tasks: TASKS,
      slots: SLOTS,
      seconds: round(seconds, 3),
      tasksPerSecond: round(tasksPerSecond),
      fractionOfXargs: typeof xargsRate === "number" ? round(tasksPerSecond / xargsRate, 4) : null,
      submitAcceptedMs: round(acceptedMs, 1),
      firstSucceededMs: firstSucceededMs === null ? null : round(firstSucceededMs, 1),
      steadyTasksPerSecond10to90: steady,
      statusPolls: polls,
      stewardCpuMsPerTask:
        cpuBefore && cpuAfter
          ? round(((cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system) * 1000) / TASKS, 3)
          : null,
      // Where the Steward process (server and agent share it under `up`) spent the run.
      stewardCpu:
        cpuBefore && cpuAfter
          ? {
              userSeconds: round(cpuAfter.user - cpuBefore.user, 2),
              systemSeconds: round(cpuAfter.system - cpuBefore.system, 2),
              fractionOfWall: round(
                (cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system) / seconds,
                3,
              ),
              // Only processes the Steward process itself waited for (not those of a detached launcher).
              reapedChildrenSeconds: round(cpuAfter.children - cpuBefore.children, 2),
            }
          : null,
      // The whole machine (all cores), the jobs' processes and this harness included.
      machineBusyFraction: machineBusy,
      storeCommits:
        commitsBefore !== null && commitsAfter !== null
          ? {
              total: commitsAfter - commitsBefore,
              perTask: round((commitsAfter - commitsBefore) / TASKS, 2),
            }
          : null,
      pollIntervalMs: POLL_MS,
    };
  } finally {
    await steward.stop();
  }
}

export const endToEndBenchmark: Benchmark = {
  name: "end-to-end",
  description: `${TASKS} \`true\` tasks (one array job) on 1 agent of ${SLOTS} slots, submit to succeeded; again with the fallback launchers`,
  needs: ["xargs"],
  async run(context) {
    const figures = await measure(context, "end-to-end");
    // The fallbacks: perl where there is no C compiler, and the shell launcher with its supervisors
    // where there is no perl either; the same run with each the agent did not choose itself.
    const perl =
      figures.launcher === "c"
        ? await measure(context, "end-to-end-perl", { STEWARD_LAUNCHER: "perl" })
        : null;
    const shell =
      figures.launcher !== "sh" ? await measure(context, "end-to-end-sh", { STEWARD_LAUNCHER: "sh" }) : null;
    const summary = (run: typeof figures | null) =>
      run && {
        tasksPerSecond: run.tasksPerSecond,
        fractionOfXargs: run.fractionOfXargs,
        stewardCpuMsPerTask: run.stewardCpuMsPerTask,
      };
    return { endToEnd: { ...figures, perlLauncher: summary(perl), shellLauncher: summary(shell) } };
  },
};

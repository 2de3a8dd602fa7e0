// Enforcement and accounting: the end-to-end short-task throughput (an array of `true` tasks on
// `steward up --agents 1 --slots 4`, submit to succeeded) with the agent enforcing limits with
// cgroups (one cgroup an attempt, made, limited, measured and removed) and with `--no-enforce`,
// runs alternating, with the CPU the Steward process (server and agent, under `up`) spent a task;
// then what accounting costs to read: `GET /api/v1/accounting` over every attempt of an enforced
// run, and the share of attempts that came with measured CPU time and peak memory.

import { type Benchmark, round, since } from "./benchmark.ts";
import { type Steward, startSteward } from "./steward-process.ts";

const TASKS = 1000;
const SLOTS = 4;
const RUNS = 3;
const POLL_MS = 25;
const TIMEOUT_MS = 10 * 60_000;
const ENDED = new Set(["succeeded", "failed", "cancelled"]);

interface AccountingRow {
  usage: { userSeconds: number | null; peakMemoryMb: number | null } | null;
}

/** Seconds from the submit request to the array reading succeeded. */
async function runArray(steward: Steward): Promise<number> {
  const start = performance.now();
  const id = await steward.api.submit({ name: "bench-enforce", command: ["true"], array: { count: TASKS } });
  for (;;) {
    const job = await steward.api.job(id);
    if (ENDED.has(job.state)) {
      if (job.state !== "succeeded") throw new Error(`job ${id} ended ${job.state}`);
      return since(start) / 1000;
    }
    if (since(start) > TIMEOUT_MS) throw new Error(`job ${id} still ${job.state} after ${TIMEOUT_MS} ms`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2;
}

export const enforcementBenchmark: Benchmark = {
  name: "enforcement",
  description: `${TASKS} \`true\` tasks on 1 agent of ${SLOTS} slots with cgroup enforcement and with --no-enforce; accounting reads`,
  async run({ options, progress }) {
    const seconds: Record<"enforced" | "notEnforced", number[]> = { enforced: [], notEnforced: [] };
    const cpuMsPerTask: Record<"enforced" | "notEnforced", number[]> = { enforced: [], notEnforced: [] };
    let accounting: Record<string, number> | null = null;
    for (let run = 0; run < RUNS; run++) {
      for (const mode of ["enforced", "notEnforced"] as const) {
        const steward = await startSteward({
          label: `enforcement-${mode}`,
          agents: 1,
          slots: SLOTS,
          cpuProf: options.cpuProf,
          keep: options.keep,
          args: mode === "enforced" ? [] : ["--no-enforce"],
        });
        try {
          const cpuBefore = steward.cpuSeconds();
          const taken = await runArray(steward);
          const cpuAfter = steward.cpuSeconds();
          seconds[mode].push(taken);
          if (cpuBefore && cpuAfter)
            cpuMsPerTask[mode].push(
              ((cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system) * 1000) / TASKS,
            );
          progress(`enforcement: ${mode}, run ${run + 1}: ${TASKS} tasks in ${round(taken, 3)} s`);
          if (mode === "enforced" && run === RUNS - 1) {
            const start = performance.now();
            const rows = (
              await steward.api.request<AccountingRow[]>("GET", "/api/v1/accounting?limit=100000")
            ).body;
            const queryMs = since(start);
            accounting = {
              rows: rows.length,
              queryMs: round(queryMs, 1),
              microsecondsPerRow: round((queryMs * 1000) / Math.max(1, rows.length), 1),
              fractionWithCpu: round(
                rows.filter((row) => row.usage?.userSeconds !== null && row.usage !== null).length /
                  Math.max(1, rows.length),
                4,
              ),
              fractionWithPeakMemory: round(
                rows.filter((row) => row.usage?.peakMemoryMb !== null && row.usage !== null).length /
                  Math.max(1, rows.length),
                4,
              ),
            };
          }
        } finally {
          await steward.stop();
        }
      }
    }
    const enforced = TASKS / median(seconds.enforced);
    const notEnforced = TASKS / median(seconds.notEnforced);
    return {
      enforcement: {
        tasks: TASKS,
        slots: SLOTS,
        runs: RUNS,
        enforcedTasksPerSecond: round(enforced),
        notEnforcedTasksPerSecond: round(notEnforced),
        enforcedOverNotEnforced: round(enforced / notEnforced, 4),
        // The Steward process's own CPU (server and agent), user + system, a task: the median run.
        stewardCpuMsPerTask: {
          enforced: cpuMsPerTask.enforced.length ? round(median(cpuMsPerTask.enforced), 2) : null,
          notEnforced: cpuMsPerTask.notEnforced.length ? round(median(cpuMsPerTask.notEnforced), 2) : null,
        },
        seconds: {
          enforced: seconds.enforced.map((value) => round(value, 3)),
          notEnforced: seconds.notEnforced.map((value) => round(value, 3)),
        },
        accounting,
      },
    };
  },
};

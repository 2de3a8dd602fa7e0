// Side by side, in one run: the same 2,000 `true` tasks, 4 at a time, through xargs -P 4, GNU
// parallel -j 4 (both from `xargs`), a Slurm array limited to 4 running at once (the one-node
// cluster of scripts/slurm-local.sh, `--array=1-N%4`, in arrays of the most the cluster takes, each
// submitted when the one before is done; skipped without a cluster), and Steward
// (one agent of 4 slots: `end-to-end` on SQLite, and `postgres` when it ran before this): each
// rate, and each ratio of the tools' throughputs.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Benchmark, type Figures, figure, round } from "./benchmark.ts";
import { slurmArraySeconds, slurmUp } from "./slurm-pool.ts";
import { XARGS_PARALLEL, XARGS_TASKS } from "./xargs.ts";

const TASKS = XARGS_TASKS;
const AT_ONCE = XARGS_PARALLEL;
/**
 * Slurm's rate is taken over fewer tasks (STEWARD_BENCH_SLURM_TASKS for another number): a limited
 * array starts about 5 tasks a second here, so all 2,000 would take some 7 minutes for the same rate.
 */
const SLURM_TASKS = Number(process.env.STEWARD_BENCH_SLURM_TASKS ?? 400);
if (!(SLURM_TASKS > 0))
  throw new Error(
    `STEWARD_BENCH_SLURM_TASKS=${process.env.STEWARD_BENCH_SLURM_TASKS}: expected a positive number`,
  );

/** `a / b` rounded, or null when either is not a rate. */
function ratio(a: number | null, b: number | null): number | null {
  return a === null || b === null || b === 0 ? null : round(a / b, 4);
}

function rate(results: Figures, path: string): number | null {
  const value = figure(results, path);
  return typeof value === "number" ? value : null;
}

/** Slurm's rate for the tasks (null and why not, when there is no cluster). */
async function slurmRate(
  progress: (message: string) => void,
): Promise<{ rate: number | null; skipped?: string }> {
  const down = await slurmUp();
  if (down) {
    progress(`side-by-side: no Slurm cluster (bash scripts/slurm-local.sh): ${down}; Slurm skipped`);
    return { rate: null, skipped: down };
  }
  const dir = mkdtempSync(join(tmpdir(), "steward-bench-side-by-side-"));
  try {
    const seconds = await slurmArraySeconds(dir, SLURM_TASKS, AT_ONCE);
    progress(`side-by-side: Slurm ran ${SLURM_TASKS} tasks, ${AT_ONCE} at once, in ${round(seconds, 2)} s`);
    return { rate: SLURM_TASKS / seconds };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

export const sideBySideBenchmark: Benchmark = {
  name: "side-by-side",
  description: `${TASKS} \`true\` tasks, ${AT_ONCE} at once: xargs, GNU parallel, a Slurm array and Steward (SQLite, and PostgreSQL when it ran), in one run`,
  needs: ["xargs", "end-to-end"],
  async run({ results, progress }) {
    const slurm = await slurmRate(progress);
    const xargs = rate(results, "raw.xargsTasksPerSecond");
    const parallel = rate(results, "raw.parallelTasksPerSecond");
    const steward = rate(results, "endToEnd.tasksPerSecond");
    const stewardPostgres = rate(results, "postgres.endToEnd.tasksPerSecond");
    const ratios = {
      stewardOverXargs: ratio(steward, xargs),
      stewardOverParallel: ratio(steward, parallel),
      stewardOverSlurm: ratio(steward, slurm.rate),
      parallelOverXargs: ratio(parallel, xargs),
      slurmOverXargs: ratio(slurm.rate, xargs),
      stewardPostgresOverXargs: ratio(stewardPostgres, xargs),
      stewardPostgresOverParallel: ratio(stewardPostgres, parallel),
      stewardPostgresOverSlurm: ratio(stewardPostgres, slurm.rate),
    };
    const shown = (value: number | null) => (value === null ? "-" : String(round(value)));
    progress(
      `side-by-side: tasks/s xargs ${shown(xargs)}, parallel ${shown(parallel)}, Slurm ${shown(slurm.rate)}, ` +
        `Steward ${shown(steward)} (SQLite), ${shown(stewardPostgres)} (PostgreSQL)`,
    );
    progress(
      `side-by-side: Steward over xargs ${ratios.stewardOverXargs ?? "-"}, over parallel ${ratios.stewardOverParallel ?? "-"}, ` +
        `over Slurm ${ratios.stewardOverSlurm ?? "-"}; parallel over xargs ${ratios.parallelOverXargs ?? "-"}`,
    );
    return {
      sideBySide: {
        tasks: TASKS,
        atOnce: AT_ONCE,
        tasksPerSecond: {
          xargs,
          parallel,
          slurm: slurm.rate === null ? null : round(slurm.rate),
          steward,
          stewardPostgres,
        },
        ratios,
        ...(slurm.skipped ? { slurmSkipped: slurm.skipped } : {}),
      },
    };
  },
};

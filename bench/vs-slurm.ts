// Side by side with Slurm: the same 400 `true` tasks through the one-node Slurm cluster of
// scripts/slurm-local.sh (as one job array, the form Slurm's high-throughput guide asks for, on a
// cluster set up as that guide says: no accounting storage or gathering, proctrack/linuxproc,
// task/none, batch_sched_delay=0) and through `steward up --agents 1 --slots 4`, in one run.
// Printed beside the xargs ratio of the end-to-end benchmark when it ran.

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Benchmark, figure, pollUntil, round, since } from "./benchmark.ts";
import { slurmArraySeconds, slurmUp } from "./slurm-pool.ts";
import { startSteward } from "./steward-process.ts";

const TASKS = 400;
const SLOTS = 4;

export const vsSlurmBenchmark: Benchmark = {
  name: "vs-slurm",
  description: `${TASKS} \`true\` tasks through one-node Slurm (a job array) and through Steward (1 agent, ${SLOTS} slots), in one run`,
  async run({ options, results, progress }) {
    const down = await slurmUp();
    if (down) {
      progress(`vs-slurm: no Slurm cluster (bash scripts/slurm-local.sh): ${down}; skipped`);
      return { vsSlurm: { skipped: down } };
    }
    const dir = mkdtempSync(join(tmpdir(), "steward-bench-vs-slurm-"));
    try {
      // Slurm: submit to the last array task gone from the queue.
      const slurmSeconds = await slurmArraySeconds(dir, TASKS);
      progress(`vs-slurm: Slurm ran ${TASKS} tasks in ${round(slurmSeconds, 2)} s`);

      // Steward: submit to every task succeeded.
      const steward = await startSteward({ label: "vs-slurm", agents: 1, slots: SLOTS, keep: options.keep });
      let stewardSeconds: number;
      try {
        const start = performance.now();
        const id = await steward.api.submit({
          name: "bench-vs-slurm",
          command: ["true"],
          array: { count: TASKS },
        });
        await pollUntil(
          "vs-slurm: the Steward array done",
          async () => ((await steward.api.job(id)).state === "succeeded" ? true : undefined),
          { intervalMs: 25, timeoutMs: 10 * 60_000 },
        );
        stewardSeconds = since(start) / 1000;
      } finally {
        await steward.stop();
      }
      progress(`vs-slurm: Steward ran ${TASKS} tasks in ${round(stewardSeconds, 2)} s`);
      const ratio = round(slurmSeconds / stewardSeconds, 2);
      const xargs = figure(results, "endToEnd.fractionOfXargs");
      progress(
        `vs-slurm: Steward is ${ratio}x Slurm's throughput on these tasks${typeof xargs === "number" ? ` (and ${xargs} of xargs -P 4 in end-to-end)` : ""}`,
      );
      return {
        vsSlurm: {
          tasks: TASKS,
          slurmSeconds: round(slurmSeconds, 3),
          stewardSeconds: round(stewardSeconds, 3),
          stewardOverSlurmThroughput: ratio,
          fractionOfXargs: typeof xargs === "number" ? xargs : null,
        },
      };
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

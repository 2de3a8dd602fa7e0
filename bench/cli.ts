// How long a CLI command takes, wall time from start to exit, on a `steward up` with no agents (so
// nothing else runs): `steward --help`, `ps`, `show ID` and `submit FILE`, 10 runs each, after one
// run of each to fill Node's compile cache. Targets of the performance issue: --help under 100 ms,
// the others under 150 ms.

import { execFileSync } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { type Benchmark, median, REPOSITORY, round } from "./benchmark.ts";
import { startSteward } from "./steward-process.ts";

const RUNS = 10;
const STEWARD = join(REPOSITORY, "bin", "steward");

export const cliBenchmark: Benchmark = {
  name: "cli",
  description: `CLI wall time: --help, ps, show, submit (median of ${RUNS} runs each, no agents)`,
  async run({ options, progress }) {
    const steward = await startSteward({ label: "cli", agents: 0, slots: 1, keep: options.keep });
    try {
      const file = join(steward.root, "job.yaml");
      writeFileSync(file, 'name: cli-bench\ncommand: "true"\nrequirements: host.name == "nowhere"\n');
      const env = { ...process.env, STEWARD_URL: steward.url, STEWARD_TOKEN: steward.token };
      const run = (args: string[]) => execFileSync(STEWARD, args, { env, stdio: ["ignore", "pipe", "pipe"] });
      const id = run(["submit", file]).toString().trim();
      const commands: Record<string, string[]> = {
        help: ["--help"],
        ps: ["ps"],
        show: ["show", id],
        submit: ["submit", file],
      };
      const figures: Record<string, { medianMs: number; runsMs: number[] }> = {};
      for (const [name, args] of Object.entries(commands)) {
        run(args);
        const runs: number[] = [];
        for (let i = 0; i < RUNS; i++) {
          const start = performance.now();
          run(args);
          runs.push(round(performance.now() - start, 1));
        }
        figures[name] = { medianMs: round(median(runs), 1), runsMs: runs };
        progress(`cli: steward ${args.join(" ")} ${figures[name].medianMs} ms (median of ${RUNS})`);
      }
      return { cli: figures };
    } finally {
      await steward.stop();
    }
  },
};

// `npm run mutation [-- STRYKER-ARGS]`: a mutation run (stryker.config.json), then the score of each
// folder of its report (scripts/mutation-score.ts). Arguments go to `stryker run` as they are, so one
// folder is `npm run mutation -- --mutate 'src/broker/scheduler/**/*.ts'`. Exits with Stryker's
// status when the run fails, printing no score (the report would be an earlier run's).

import { spawnSync } from "node:child_process";
import { join } from "node:path";

const stryker = join(import.meta.dirname, "..", "node_modules", ".bin", "stryker");
const run = spawnSync(stryker, ["run", ...process.argv.slice(2)], { stdio: "inherit" });
if (run.status !== 0) {
  console.error(`mutation: stryker run ended with ${run.status ?? run.signal}; no score printed`);
  process.exit(run.status ?? 1);
}
const score = spawnSync(process.execPath, [join(import.meta.dirname, "mutation-score.ts")], {
  stdio: "inherit",
});
process.exit(score.status ?? 1);

// The soak of the benchmarks (bench/soak.ts), short: the LCG slice in a loop for 30 s on two
// brokers on PostgreSQL and four agents (in network namespaces where they can be made), with a
// fault every 8 s (every agent connection reset; the links slowed to 200 ms; a database restart),
// sampled every 3 s. Every job succeeds exactly once, and no figure grows past a generous bound:
// over so short a run a slope says little, so the bounds compare the last third of the samples
// with the first (RSS at most doubled and at most 48 MB more, descriptors at most doubled plus 20), and hold the event
// loop's p99 under 2 s and the store under 64 MB (each round's jobs are removed once ended).

import { expect, it } from "vitest";
import { lastOverFirstThird } from "../../bench/growth.ts";
import { runSoak, seriesOf } from "../../bench/soak.ts";
import { postgresUnreachable, SAFE_PG_URL } from "../helpers/postgres.ts";

const unreachable = await postgresUnreachable();
/** A private cluster needs root; without it the soak runs on the shared server. */
const noDatabase = process.getuid?.() !== 0 && unreachable;

const RSS_GROWTH_BOUND = 2;
/** MB the mean RSS of the last third may exceed the first's by (a broker holds about 120 MB here). */
const RSS_GROWTH_BOUND_MB = 48;
const LAG_P99_BOUND_MS = 2000;
const STORE_BOUND_MB = 64;

/** The descriptors of the last third at most twice the first's, plus 20. */
function descriptorsWithinBound(values: number[]): boolean {
  const third = Math.floor(values.length / 3);
  const first = Math.max(...values.slice(0, third));
  return Math.max(...values.slice(values.length - third)) <= 2 * first + 20;
}

it("a short soak with periodic faults: every job once, RSS, descriptors, store and event-loop lag bounded", async (context) => {
  if (noDatabase) {
    if (process.env.CI) throw new Error(`PostgreSQL at ${SAFE_PG_URL} unreachable: ${unreachable}`);
    context.skip(`PostgreSQL at ${SAFE_PG_URL} unreachable and no private cluster: ${unreachable}`);
  }
  const result = await runSoak({
    durationSeconds: 30,
    sampleSeconds: 3,
    faultSeconds: 8,
    slice: {
      skip: 0,
      jobs: 20,
      compress: 40,
      runScale: 400,
      minRunSeconds: 0.1,
      maxRunSeconds: 2,
      dbDownSeconds: 2,
    },
    progress: () => {},
  });
  console.log(
    `soak-short: ${result.rounds} rounds, ${result.submitted} jobs, ${result.rows.length} samples, faults ${result.faults.join("; ")}; ${result.database}; agents on ${result.agentNetwork}`,
  );
  expect(result.rounds).toBeGreaterThan(0);
  expect(result.faults.length).toBeGreaterThanOrEqual(3);
  expect(result.tasksSucceededMoreThanOnce).toBe(0);
  expect(result.succeededExactlyOnce).toBe(result.submitted);
  expect(result.rows.length).toBeGreaterThanOrEqual(6);
  const series = seriesOf(result.rows);
  const broken: string[] = [];
  for (const [name, samples] of series) {
    const values = samples.map((sample) => sample.value);
    if (name.endsWith("rssMb")) {
      const ratio = lastOverFirstThird(samples);
      const third = Math.floor(values.length / 3);
      const mean = (part: number[]) => part.reduce((sum, value) => sum + value, 0) / part.length;
      const grewMb = mean(values.slice(values.length - third)) - mean(values.slice(0, third));
      if (ratio === null || ratio > RSS_GROWTH_BOUND || grewMb > RSS_GROWTH_BOUND_MB)
        broken.push(`${name}: last third over first ${ratio}, ${grewMb} MB more`);
    } else if (name.endsWith("fds")) {
      if (!descriptorsWithinBound(values)) broken.push(`${name}: ${values.join(" ")}`);
    } else if (name.endsWith("lagP99Ms")) {
      if (Math.max(...values) > LAG_P99_BOUND_MS) broken.push(`${name}: ${values.join(" ")}`);
    } else if (Math.max(...values) > STORE_BOUND_MB) broken.push(`${name}: ${values.join(" ")}`);
  }
  expect(broken).toStrictEqual([]);
  // Every process was measured: two brokers and four agents, each figure, and the store.
  for (const name of ["broker1", "broker2", "agent1", "agent2", "agent3", "agent4"]) {
    for (const figure of ["rssMb", "fds", "lagP99Ms"])
      expect(series.has(`${name} ${figure}`), `${name} ${figure}`).toBe(true);
  }
  expect(series.has("store storeMb")).toBe(true);
}, 240_000);

// slurm: a pool backed by the real Slurm cluster of scripts/slurm-local.sh. The time from submit
// to the first task running on an empty pool (a pilot is submitted, starts, joins), then 1,000
// `true` tasks through 2 pilots of 2 slots against the same 1,000 as one Slurm array.

import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { type Benchmark, round, since } from "./benchmark.ts";
import { startCluster } from "./steward-cluster.ts";

const run = promisify(execFile);
const TASKS = 1000;
const POOL = "benchpool";

/** Null when the Slurm cluster answers; else why not. */
export async function slurmUp(): Promise<string | null> {
  try {
    const { stdout } = await run("scontrol", ["ping"], { timeout: 5000 });
    return /\bUP\b/.test(stdout) ? null : stdout.trim();
  } catch (error) {
    return (error as Error).message;
  }
}

async function waitUntil(what: string, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const started = performance.now();
  while (!(await check())) {
    if (since(started) > timeoutMs) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The largest array task index the cluster takes (MaxArraySize - 1; Slurm's default 1000). */
async function maxArrayIndex(): Promise<number> {
  const { stdout } = await run("scontrol", ["show", "config"]);
  const size = /^MaxArraySize\s*=\s*(\d+)/m.exec(stdout);
  return size ? Number(size[1]) - 1 : 1000;
}

/**
 * Seconds for `count` `true` jobs as one Slurm array, submit to the last one gone from the queue;
 * at most `atOnce` of them running at a time when given (`--array=1-N%atOnce`). More tasks than
 * the cluster's largest array go as several arrays, each submitted when the one before is done.
 */
export async function slurmArraySeconds(dir: string, count = TASKS, atOnce?: number): Promise<number> {
  const largest = await maxArrayIndex();
  const start = performance.now();
  for (let left = count; left > 0; left -= largest) {
    const size = Math.min(left, largest);
    const { stdout } = await run("sbatch", [
      "--parsable",
      `--array=1-${size}${atOnce === undefined ? "" : `%${atOnce}`}`,
      "--job-name=steward-bench-array",
      `--output=${join(dir, "array-%A_%a.log")}`,
      "--wrap=true",
    ]);
    const id = stdout.trim().split(";")[0];
    await waitUntil(
      "the Slurm array to finish",
      async () => {
        const queue = await run("squeue", ["--noheader", `--jobs=${id}`, "--format=%i"]).catch(() => ({
          stdout: "x",
        }));
        return queue.stdout.trim() === "";
      },
      30 * 60_000,
    );
  }
  return since(start) / 1000;
}

/** Cancels this account's pilots of the bench pool (named steward-pilot-TAG-benchpool, TAG the cluster's). */
async function cancelPilots(): Promise<void> {
  const user = userInfo().username;
  const { stdout } = await run("squeue", ["-h", `--user=${user}`, "--format=%i %j"]);
  const ids = stdout
    .split("\n")
    .map((line) => line.trim().split(" "))
    .filter(([, name]) => name?.startsWith("steward-pilot-") && name.endsWith(`-${POOL}`))
    .map(([id]) => id);
  if (ids.length > 0) await run("scancel", [`--user=${user}`, ...ids]);
}

export const slurmPoolBenchmark: Benchmark = {
  name: "slurm",
  description: `a Slurm pool: submit to the first task running on an empty pool; ${TASKS} tasks through 2 pilots against one Slurm array`,
  async run({ progress }) {
    const down = await slurmUp();
    if (down) {
      progress(`slurm: no cluster (bash scripts/slurm-local.sh): ${down}; skipped`);
      return { slurm: { skipped: down } };
    }
    const dir = mkdtempSync(join(tmpdir(), "steward-bench-slurm-"));
    const poolsFile = join(dir, "pools.yaml");
    writeFileSync(
      poolsFile,
      `pools:\n  - name: ${POOL}\n    driver: slurm\n    maxPilots: 2\n    backlog: 2\n    slotsPerPilot: 2\n    walltime: 1800\n    idleSeconds: 10\n    allowBrokerAccount: true\n`,
    );
    const cluster = await startCluster({
      label: "slurm",
      agents: 0,
      slots: 1,
      serverArgs: ["--pools", poolsFile],
    });
    try {
      const { api } = cluster;
      let start = performance.now();
      const first = await api.submit({ name: "bench-first", command: "true" });
      await waitUntil(
        "the first task to run",
        async () => (await api.job(first)).state !== "pending",
        5 * 60_000,
      );
      const firstSeconds = since(start) / 1000;
      progress(`slurm: first task running ${round(firstSeconds, 2)} s after submit on an empty pool`);
      start = performance.now();
      const many = await api.submit({ name: "bench-many", command: ["true"], array: { count: TASKS } });
      await waitUntil(
        "the array on pilots",
        async () => (await api.job(many)).state === "succeeded",
        30 * 60_000,
      );
      const pilotSeconds = since(start) / 1000;
      progress(`slurm: ${TASKS} tasks through 2 pilots in ${round(pilotSeconds, 2)} s`);
      const arraySeconds = await slurmArraySeconds(dir);
      progress(`slurm: the same ${TASKS} as one Slurm array in ${round(arraySeconds, 2)} s`);
      return {
        slurm: {
          firstTaskSeconds: round(firstSeconds, 3),
          pilots1000Seconds: round(pilotSeconds, 3),
          slurmArray1000Seconds: round(arraySeconds, 3),
          pilotsOverArray: round(pilotSeconds / arraySeconds, 3),
        },
      };
    } finally {
      await cluster.stop();
      await cancelPilots().catch(() => {});
      rmSync(dir, { recursive: true, force: true });
    }
  },
};

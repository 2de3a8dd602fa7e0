// Queue-wait migration against real Slurm (GridWay's suspension timeout, for pools): a pool whose
// partition is down holds its pilots pending; after maxQueueWaitSeconds they are cancelled and the
// work runs on the next pool; `steward pools` and `explain` say why; once the partition is up again
// the first pool is used again. Takes the test cluster's spare partition down, and back up after.
// Skips without Slurm, fails under CI or STEWARD_SLURM=1.

import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, expect, it } from "vitest";
import { SlurmDriver } from "../../src/broker/drivers/slurm.ts";
import { ownPilots, slurmTests, slurmUnavailable } from "../helpers/slurm.ts";
import {
  api,
  cleanup,
  cli,
  type StewardProcess,
  startServerProcess,
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

const run = promisify(execFile);
const unavailable = await slurmUnavailable();
const far = `far${process.pid}`;
const near = `near${process.pid}`;
const SPARE = "spare";
const driver = new SlurmDriver();
let server: (StewardProcess & { joinToken: string }) | undefined;
const data = tempDir("steward-queue-wait-");

const partition = (state: "UP" | "DOWN") =>
  run("scontrol", ["update", `PartitionName=${SPARE}`, `State=${state}`]);

afterAll(async () => {
  await partition("UP").catch(() => {});
  await server?.stop();
  for (const pool of [far, near]) {
    if (!server) break;
    const owner = ownPilots(server.joinToken, pool);
    for (const pilot of await driver.list(owner).catch(() => [])) await driver.cancel(pilot.id, owner);
  }
  cleanup(data);
});

interface PoolView {
  name: string;
  state: string;
  reason: string | null;
}

slurmTests("queue wait", unavailable, () => {
  it("work leaves a pool whose partition is down for the next pool, and comes back once it is up", async () => {
    const poolsFile = join(data, "pools.yaml");
    writeFileSync(
      poolsFile,
      [
        "pools:",
        `  - {name: ${far}, driver: slurm, partition: ${SPARE}, maxPilots: 2, backlog: 2, slotsPerPilot: 1, idleSeconds: 3, maxQueueWaitSeconds: 8, allowBrokerAccount: true}`,
        `  - {name: ${near}, driver: slurm, partition: debug, maxPilots: 2, backlog: 2, slotsPerPilot: 1, idleSeconds: 3, allowBrokerAccount: true}`,
      ].join("\n"),
    );
    await partition("DOWN");
    server = await startServerProcess({ data, args: ["--pools", poolsFile] });
    const s = server;
    const submitted = (await api(s, "POST", "/api/v1/jobs", { command: "sleep 4", array: { count: 2 } })) as {
      id: string;
    };

    // First the preferred pool's pilots wait in the down partition, and explain says so.
    const waiting = await waitFor(
      "explain to show the far pool's pilots pending",
      async () => {
        const out = await cli(s, ["explain", submitted.id]);
        // Once squeue has said why they wait.
        const pending = new RegExp(`${far}: \\d pilots? pending in the batch queue for \\d+ s \\(\\w+\\)`);
        return pending.test(out.stdout) ? out.stdout : null;
      },
      30_000,
      250,
    );
    expect(waiting).toMatch(/PartitionDown|PartitionInactive/);
    // After maxQueueWaitSeconds they are cancelled: the far pool is unavailable and says why.
    const seen = await waitFor(
      "the far pool to turn unavailable for its queue wait",
      async () => {
        const pools = JSON.parse((await cli(s, ["pools", "--json"])).stdout) as PoolView[];
        const pool = pools.find((each) => each.name === far)!;
        if (pool.state !== "unavailable") return null;
        const explained = await cli(s, ["explain", submitted.id]);
        return { pool, explained: explained.stdout };
      },
      40_000,
      250,
    );
    expect(seen.pool.reason).toMatch(/waited more than 8 s in the batch queue/);
    expect(seen.pool.reason).toMatch(/goes to other pools/);
    expect(seen.explained).toContain(`${far}: unavailable: pilot`);

    // Its work runs on the next pool.
    const job = await waitForJobEnd(s, submitted.id, 90_000);
    expect(job.state).toBe("succeeded");
    for (const task of job.tasks) {
      for (const attempt of task.attempts) expect(attempt.host.startsWith(`${near}-`)).toBe(true);
    }
    expect(await driver.list(ownPilots(s.joinToken, far))).toStrictEqual([]);

    // Up again: once the near pool's pilots have left, new work goes to the far pool again.
    await partition("UP");
    const upAt = Date.now();
    await waitFor(
      "the near pool's pilots to leave",
      async () => (await driver.list(ownPilots(s.joinToken, near))).length === 0,
      30_000,
      500,
    );
    const again = (await api(s, "POST", "/api/v1/jobs", { command: "true" })) as { id: string };
    const later = await waitForJobEnd(s, again.id, 60_000);
    expect(later.state).toBe("succeeded");
    expect(later.tasks[0].attempts[0].host.startsWith(`${far}-`)).toBe(true);
    const seconds = (Date.now() - upAt) / 1000;
    expect(seconds).toBeLessThan(60);
    console.log(`queue wait: far pool used again ${seconds.toFixed(1)} s after its partition came up`);
  }, 240_000);
});

// Other Slurm users can neither fake nor starve a pool's pilots (issue 22, item 9): jobs that
// another account submits under the very name of the pool's pilots (one held pending, one running)
// are not counted as pilots, not cancelled when they wait too long, and do not keep the pool from
// starting a pilot of its own for new work. Needs root (useradd, runuser) and the Slurm test cluster.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, expect, it } from "vitest";
import { SlurmDriver } from "../../src/broker/drivers/slurm.ts";
import {
  accountsUnavailable,
  createAccount,
  type LocalAccount,
  removeAccount,
} from "../helpers/local-accounts.ts";
import { ownPilots, slurm, slurmTests, slurmUnavailable } from "../helpers/slurm.ts";
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

const unavailable = (await slurmUnavailable()) ?? accountsUnavailable();
const pool = `fp${process.pid}`;
const otherName = `stwother${process.pid}`;
let other: LocalAccount | undefined;
let server: (StewardProcess & { joinToken: string }) | undefined;
const data = tempDir("steward-foreign-pilots-");

afterAll(async () => {
  await server?.stop();
  if (server) {
    const driver = new SlurmDriver();
    const owner = ownPilots(server.joinToken, pool);
    for (const pilot of await driver.list(owner).catch(() => [])) await driver.cancel(pilot.id, owner);
  }
  if (other) {
    await slurm("scancel", [`--user=${other.name}`]).catch(() => undefined);
    await waitFor(
      "the other account's jobs to leave",
      async () => (await slurm("squeue", ["-h", `--user=${otherName}`])).trim() === "",
      30_000,
      500,
    ).catch(() => undefined);
    removeAccount(other.name);
  }
  cleanup(data);
});

interface PoolView {
  name: string;
  state: string;
  pilots: { pending: number; running: number; ending: number };
}

/** Submits a job as `account` under `name`; its Slurm job id. */
async function submitAs(account: string, name: string, extra: string[]): Promise<string> {
  const out = await slurm("runuser", [
    "-u",
    account,
    "--",
    "sbatch",
    "--parsable",
    `--job-name=${name}`,
    "--chdir=/tmp",
    "--output=/dev/null",
    "--time=10",
    ...extra,
    "--wrap",
    "sleep 300",
  ]);
  return out.trim().split(";")[0];
}

/** The job's state in Slurm, or "" once it is gone. */
async function slurmState(id: string): Promise<string> {
  return (
    await slurm("squeue", ["-h", "--states=all", `--jobs=${id}`, "--format=%T"]).catch(() => "")
  ).trim();
}

slurmTests("foreign pilots", unavailable, () => {
  it("jobs of another account named like the pool's pilots are neither counted nor cancelled", async () => {
    other = createAccount(otherName);
    const poolsFile = join(data, "pools.yaml");
    writeFileSync(
      poolsFile,
      [
        "pools:",
        `  - name: ${pool}`,
        "    driver: slurm",
        "    partition: debug",
        "    maxPilots: 1",
        "    backlog: 1",
        "    walltime: 600",
        "    idleSeconds: 3",
        "    maxQueueWaitSeconds: 4",
        "    allowBrokerAccount: true",
      ].join("\n"),
    );
    server = await startServerProcess({ data, args: ["--pools", poolsFile] });
    const s = server;

    // A first job brings up a pilot: the name the pool's pilots carry is read from Slurm's queue.
    const first = (await api(s, "POST", "/api/v1/jobs", { command: "sleep 2" })) as { id: string };
    const pilotName = await waitFor(
      "a pilot of the pool in Slurm's queue",
      async () => {
        const out = await slurm("squeue", ["-h", "--states=all", "--format=%j"]);
        return out
          .split("\n")
          .map((line) => line.trim())
          .find((name) => name.startsWith("steward-pilot") && name.endsWith(`-${pool}`));
      },
      30_000,
      200,
    );
    expect((await waitForJobEnd(s, first.id, 60_000)).state).toBe("succeeded");
    await waitFor(
      "the pool's pilot to leave",
      async () => {
        const [only] = JSON.parse((await cli(s, ["pools", "--json"])).stdout) as PoolView[];
        return only.pilots.pending + only.pilots.running + only.pilots.ending === 0;
      },
      30_000,
      500,
    );

    // Another account submits jobs of that name: one held (pending), one running.
    const held = await submitAs(other.name, pilotName, ["--hold"]);
    const running = await submitAs(other.name, pilotName, []);
    await waitFor(
      "the other account's job to run",
      async () => (await slurmState(running)) === "RUNNING",
      15_000,
      200,
    );

    // Past maxQueueWaitSeconds and a few rounds of the pool: not counted, not cancelled.
    for (let round = 0; round < 5; round++) {
      await sleep(2000);
      const [only] = JSON.parse((await cli(s, ["pools", "--json"])).stdout) as PoolView[];
      expect(only.pilots, `round ${round}`).toStrictEqual({ pending: 0, running: 0, ending: 0 });
    }
    expect(await slurmState(held)).toBe("PENDING");
    expect(await slurmState(running)).toBe("RUNNING");

    // New work still gets a pilot of the pool's own (the fakes take no place under maxPilots).
    const second = (await api(s, "POST", "/api/v1/jobs", { command: "true" })) as { id: string };
    const ended = await waitForJobEnd(s, second.id, 60_000);
    expect(ended.state).toBe("succeeded");
    expect(ended.tasks[0].attempts[0].host.startsWith(`${pool}-`)).toBe(true);
    expect(await slurmState(held)).toBe("PENDING");
    expect(await slurmState(running)).toBe("RUNNING");
  }, 180_000);
});

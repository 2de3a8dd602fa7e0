// The Slurm driver against the real one-node cluster (scripts/slurm-local.sh): a pilot is submitted
// with sbatch, listed by squeue under its pool while it waits or runs, cancelled with scancel, and a
// batch system's refusal comes back with Slurm's own message. Skips without Slurm, as the smoke test.

import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir, userInfo } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { DriverError } from "../../src/broker/drivers/driver.ts";
import { SlurmDriver } from "../../src/broker/drivers/slurm.ts";
import { slurmTests, slurmUnavailable, waitForSlurmJobEnd } from "../helpers/slurm.ts";
import { waitFor } from "../helpers/steward.ts";

const unavailable = await slurmUnavailable();
const folders: string[] = [];
const driver = new SlurmDriver();
const pool = `test${process.pid}`;
const owner = { jobName: `steward-pilot-test-${pool}`, account: userInfo().username, runAs: [] };

afterAll(async () => {
  for (const pilot of await driver.list(owner).catch(() => [])) await driver.cancel(pilot.id, owner);
  await Promise.all(folders.map((folder) => rm(folder, { recursive: true, force: true })));
});

slurmTests("Slurm driver", unavailable, () => {
  it("submits a pilot, lists it under its pool, and cancels it", async () => {
    const logDir = await mkdtemp(join(tmpdir(), "steward-pilots-"));
    folders.push(logDir);
    const id = await driver.submit({
      pool,
      owner,
      cpus: 1,
      walltimeSeconds: 120,
      command: "sleep 60",
      logDir,
    });
    expect(id).toMatch(/^\d+$/);
    const running = await waitFor(
      "the pilot running",
      async () => (await driver.list(owner)).find((pilot) => pilot.id === id && pilot.state === "running"),
      15_000,
      200,
    );
    expect(running.batchState).toBe("RUNNING");
    expect(await driver.list({ ...owner, jobName: `steward-pilot-test-other${process.pid}` })).toStrictEqual(
      [],
    );
    await driver.cancel(id, owner);
    await waitFor(
      "the pilot gone",
      async () => !(await driver.list(owner)).some((pilot) => pilot.id === id),
      15_000,
      200,
    );
    // Cancelling a pilot that is gone already is not an error.
    await driver.cancel(id, owner);
  });

  it("runs the pilot's command and writes its output in the log folder", async () => {
    const logDir = await mkdtemp(join(tmpdir(), "steward-pilots-"));
    folders.push(logDir);
    const id = await driver.submit({
      pool,
      owner,
      cpus: 1,
      walltimeSeconds: 60,
      command: "echo pilot-ran",
      logDir,
    });
    const job = await waitForSlurmJobEnd(id);
    expect(job.JobState).toBe("COMPLETED");
    expect(await readFile(join(logDir, `pilot-${id}.log`), "utf8")).toBe("pilot-ran\n");
  });

  it("a refused submission says why, in Slurm's words", async () => {
    const logDir = await mkdtemp(join(tmpdir(), "steward-pilots-"));
    folders.push(logDir);
    const refused = driver.submit({
      pool,
      owner,
      cpus: 1,
      walltimeSeconds: 60,
      command: "true",
      logDir,
      partition: "nowhere",
    });
    await expect(refused).rejects.toBeInstanceOf(DriverError);
    await expect(refused).rejects.toThrow(/sbatch: .*invalid partition/i);
  });
});

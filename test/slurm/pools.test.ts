// A pool backed by the real Slurm cluster: the server submits pilot jobs with sbatch when its work
// finds no room, the pilots' agents join the pool and run the work, leave when idle, and Slurm's
// queue is empty at the end. Skips without Slurm, as the smoke test.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
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

const unavailable = await slurmUnavailable();
const pool = `p${process.pid}`;
const driver = new SlurmDriver();
let server: (StewardProcess & { joinToken: string }) | undefined;
const data = tempDir("steward-pools-");

afterAll(async () => {
  await server?.stop();
  if (server) {
    const owner = ownPilots(server.joinToken, pool);
    for (const pilot of await driver.list(owner).catch(() => [])) await driver.cancel(pilot.id, owner);
  }
  cleanup(data);
});

slurmTests("Slurm pools", unavailable, () => {
  it("runs an array of 20 tasks on pilots that sbatch started; the pilots leave when idle", async () => {
    const poolsFile = join(data, "pools.yaml");
    writeFileSync(
      poolsFile,
      [
        "pools:",
        `  - name: ${pool}`,
        "    driver: slurm",
        "    partition: debug",
        "    maxPilots: 2",
        "    backlog: 2",
        "    slotsPerPilot: 2",
        "    walltime: 600",
        "    idleSeconds: 4",
        "    allowBrokerAccount: true",
      ].join("\n"),
    );
    server = await startServerProcess({ data, args: ["--pools", poolsFile] });
    const s = server;
    const submitted = (await api(s, "POST", "/api/v1/jobs", {
      command: "sleep 0.5",
      array: { count: 20 },
    })) as { id: string };
    const seenPilots = new Set<string>();
    const ended = await waitFor(
      "the array to finish on pilots",
      async () => {
        for (const host of (await api(s, "GET", "/api/v1/hosts")) as { name: string; pool: string }[]) {
          if (host.pool === pool) seenPilots.add(host.name);
        }
        const job = (await api(s, "GET", `/api/v1/jobs/${submitted.id}?tasks=0&events=0`)) as {
          state: string;
        };
        return job.state === "succeeded" ? job : null;
      },
      120_000,
      250,
    );
    expect(ended.state).toBe("succeeded");
    expect(seenPilots.size).toBeGreaterThanOrEqual(1);
    expect(seenPilots.size).toBeLessThanOrEqual(2);
    const job = await waitForJobEnd(s, submitted.id);
    const hostsUsed = new Set(job.tasks.flatMap((task) => task.attempts.map((attempt) => attempt.host)));
    for (const host of hostsUsed) expect(host.startsWith(`${pool}-`)).toBe(true);
    const listed = await cli(s, ["pools", "--json"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect((JSON.parse(listed.stdout) as { name: string; state: string }[])[0]).toMatchObject({
      name: pool,
      state: "ok",
    });
    // Idle pilots leave, and Slurm's queue holds none of them.
    await waitFor(
      "the pilots to leave Slurm's queue",
      async () => (await driver.list(ownPilots(s.joinToken, pool))).length === 0,
      30_000,
      500,
    );
    // And their hosts are removed once Slurm no longer lists them.
    await waitFor(
      "the departed pilots' hosts to be removed",
      async () =>
        ((await api(s, "GET", "/api/v1/hosts")) as { pool: string }[]).every((host) => host.pool !== pool),
      15_000,
      500,
    );
  });

  it("a pool whose sbatch always fails turns unavailable with Slurm's message; its work waits, nothing lost", async () => {
    const bad = `${pool}x`;
    const poolsFile = join(data, "bad-pools.yaml");
    writeFileSync(
      poolsFile,
      [
        "pools:",
        `  - name: ${bad}`,
        "    driver: slurm",
        "    partition: nowhere",
        "    allowBrokerAccount: true",
      ].join("\n"),
    );
    const badData = tempDir("steward-pools-bad-");
    const s = await startServerProcess({ data: badData, args: ["--pools", poolsFile] });
    try {
      const submitted = (await api(s, "POST", "/api/v1/jobs", { command: "true" })) as { id: string };
      const listed = await waitFor(
        "the pool to turn unavailable",
        async () => {
          const result = await cli(s, ["pools", "--json"]);
          const [only] = JSON.parse(result.stdout) as { state: string; reason: string | null }[];
          return only.state === "unavailable" ? only : null;
        },
        60_000,
        500,
      );
      expect(listed.reason).toMatch(/sbatch: .*invalid partition/i);
      const job = (await api(s, "GET", `/api/v1/jobs/${submitted.id}?tasks=0&events=0`)) as { state: string };
      expect(job.state).toBe("pending");
      const table = await cli(s, ["pools"]);
      expect(table.stdout).toMatch(new RegExp(`${bad} +slurm +unavailable`));
    } finally {
      await s.stop();
      cleanup(badData);
    }
  });

  it("a pool whose pilots fail to start backs off and turns unavailable instead of submitting forever", async () => {
    const broken = `${pool}b`;
    const poolsFile = join(data, "broken-pools.yaml");
    // Slurm cannot open this log: each pilot fails at launch, before its agent could join.
    writeFileSync(
      poolsFile,
      [
        "pools:",
        `  - name: ${broken}`,
        "    driver: slurm",
        '    sbatchArgs: ["--output=/nonexistent-steward/pilot.log"]',
        "    allowBrokerAccount: true",
      ].join("\n"),
    );
    const brokenData = tempDir("steward-pools-broken-");
    const s = await startServerProcess({ data: brokenData, args: ["--pools", poolsFile] });
    try {
      await api(s, "POST", "/api/v1/jobs", { command: "true" });
      const listed = await waitFor(
        "the pool to turn unavailable",
        async () => {
          const result = await cli(s, ["pools", "--json"]);
          const [only] = JSON.parse(result.stdout) as { state: string; reason: string | null }[];
          return only.state === "unavailable" ? only : null;
        },
        60_000,
        500,
      );
      expect(listed.reason).toMatch(/ended before its agent joined/);
    } finally {
      await s.stop();
      const owner = ownPilots(s.joinToken, broken);
      for (const pilot of await driver.list(owner).catch(() => [])) await driver.cancel(pilot.id, owner);
      cleanup(brokenData);
    }
  });
});

// Walltime-aware placement against real Slurm: a 90 s checkpointing task on pilots whose walltime
// is 60 s (margin 10 s) moves with its checkpoint before each walltime, finishes, and no attempt of
// it ends lost, failed, or killed by Slurm. Skips without Slurm, fails under CI or STEWARD_SLURM=1.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { SlurmDriver } from "../../src/broker/drivers/slurm.ts";
import { attemptLog, countingScript, startedAt } from "../helpers/pilot-job.ts";
import { ownPilots, removePilotCgroups, slurmTests, slurmUnavailable } from "../helpers/slurm.ts";
import {
  api,
  cleanup,
  type StewardProcess,
  startServerProcess,
  tempDir,
  waitForJobEnd,
} from "../helpers/steward.ts";

const unavailable = await slurmUnavailable();
const pool = `w${process.pid}`;
const driver = new SlurmDriver();
let server: (StewardProcess & { joinToken: string }) | undefined;
const data = tempDir("steward-walltime-");

afterAll(async () => {
  await server?.stop();
  if (server) {
    const owner = ownPilots(server.joinToken, pool);
    for (const pilot of await driver.list(owner).catch(() => [])) await driver.cancel(pilot.id, owner);
  }
  // Slurm killed pilots here: what they could not remove goes before their folders do.
  await removePilotCgroups(data, pool);
  cleanup(data);
});

slurmTests("pilot walltime", unavailable, () => {
  it("a 90 s task on 60 s pilots migrates before each walltime with its checkpoint and finishes", async () => {
    const poolsFile = join(data, "pools.yaml");
    writeFileSync(
      poolsFile,
      [
        "pools:",
        `  - name: ${pool}`,
        "    driver: slurm",
        "    partition: debug",
        "    maxPilots: 2",
        "    backlog: 1",
        "    slotsPerPilot: 1",
        "    walltime: 60",
        "    idleSeconds: 3",
        "    allowBrokerAccount: true",
      ].join("\n"),
    );
    server = await startServerProcess({
      data,
      args: ["--pools", poolsFile, "--walltime-margin-seconds", "10", "--no-reschedule", "--no-preempt"],
    });
    const s = server;
    const script = countingScript(data, 90);
    const submitted = (await api(s, "POST", "/api/v1/jobs", {
      command: ["bash", script],
      checkpoint: { intervalSeconds: 2, graceSeconds: 5 },
    })) as { id: string };
    const started = Date.now();
    const job = await waitForJobEnd(s, submitted.id, 240_000);
    const seconds = (Date.now() - started) / 1000;
    const attempts = job.tasks[0].attempts;
    expect(job.state, JSON.stringify(attempts)).toBe("succeeded");
    // Each pilot gave it at most 50 s: it moved at least once, always as a walltime migration.
    expect(attempts.length).toBeGreaterThanOrEqual(2);
    for (const attempt of attempts.slice(0, -1)) {
      expect(attempt.outcome).toBe("migrated");
      expect(attempt.reason).toBe("pilot walltime");
    }
    expect(attempts.at(-1)!.outcome).toBe("succeeded");
    expect(new Set(attempts.map((attempt) => attempt.host)).size).toBe(attempts.length);
    for (const attempt of attempts) expect(attempt.host.startsWith(`${pool}-`)).toBe(true);
    // Each later attempt resumed from its predecessor's checkpoint, never from the start.
    const starts: number[] = [];
    for (const attempt of attempts)
      starts.push(startedAt(await attemptLog(s, submitted.id, attempt.number)) ?? -1);
    expect(starts[0]).toBe(0);
    for (const at of starts.slice(1)) expect(at).toBeGreaterThan(30);
    expect(job.events.some((event) => event.kind === "walltime.migrate")).toBe(true);
    // A migration is not charged: the job had one attempt in its retry budget.
    console.log(
      `walltime: 90 s task on 60 s pilots finished in ${seconds.toFixed(1)} s over ${attempts.length} attempts, resumed at ${starts.slice(1).join(", ")}`,
    );
  }, 300_000);
});

// A pilot cancelled with scancel mid-task, against real Slurm: its agent stops the task as a
// migration (the task checkpoints in the grace period Slurm's SIGTERM leaves), the task restarts on
// another pilot from its checkpoint without using its retry budget, the pool starts that pilot,
// and the cancelled pilot's host is removed. Skips without Slurm, fails under CI or STEWARD_SLURM=1.

import { execFile } from "node:child_process";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
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
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

const run = promisify(execFile);
const unavailable = await slurmUnavailable();
const pool = `c${process.pid}`;
const driver = new SlurmDriver();
let server: (StewardProcess & { joinToken: string }) | undefined;
const data = tempDir("steward-scancel-");

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

interface TaskView {
  checkpoint: { generation: number } | null;
  attempts: { number: number; host: string; state: string; outcome: string | null }[];
}

/** The task's running attempt once the task has stored two checkpoints. */
function runningWithCheckpoint(s: StewardProcess, id: string) {
  return waitFor(
    "the task to run on a pilot with a checkpoint stored",
    async () => {
      const job = (await api(s, "GET", `/api/v1/jobs/${id}`)) as { tasks: TaskView[] };
      const task = job.tasks[0];
      const running = task.attempts.find((attempt) => attempt.state === "running");
      return running && (task.checkpoint?.generation ?? 0) >= 2 ? running : null;
    },
    90_000,
    250,
  );
}

slurmTests("scancel", unavailable, () => {
  it("a pilot cancelled mid-task: the task resumes on a new pilot from its checkpoint", async () => {
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
        "    walltime: 600",
        "    idleSeconds: 3",
        "    allowBrokerAccount: true",
      ].join("\n"),
    );
    server = await startServerProcess({ data, args: ["--pools", poolsFile, "--no-reschedule"] });
    const s = server;
    const script = countingScript(data, 20);
    const submitted = (await api(s, "POST", "/api/v1/jobs", {
      command: ["bash", script],
      checkpoint: { intervalSeconds: 1, graceSeconds: 5 },
    })) as { id: string };
    const first = await runningWithCheckpoint(s, submitted.id);
    expect(first.host.startsWith(`${pool}-`)).toBe(true);
    const pilotId = first.host.slice(pool.length + 1);
    await driver.cancel(pilotId, ownPilots(s.joinToken, pool));

    const job = await waitForJobEnd(s, submitted.id, 120_000);
    const attempts = job.tasks[0].attempts;
    expect(job.state, JSON.stringify(attempts)).toBe("succeeded");
    expect(attempts[0].host).toBe(first.host);
    expect(attempts[0].outcome).toBe("migrated");
    expect(attempts[0].reason).toBe("pilot ended by its batch system");
    const last = attempts.at(-1)!;
    expect(last.outcome).toBe("succeeded");
    expect(last.host).not.toBe(first.host);
    expect(last.host.startsWith(`${pool}-`)).toBe(true);
    const resumed = startedAt(await attemptLog(s, submitted.id, last.number));
    expect(resumed).toBeGreaterThan(0);
    // The cancelled pilot's host goes once Slurm no longer lists it.
    await waitFor(
      "the cancelled pilot's host to be removed",
      async () => {
        const hosts = (await api(s, "GET", "/api/v1/hosts")) as { name: string }[];
        return hosts.every((host) => host.name !== first.host);
      },
      30_000,
      500,
    );
    console.log(`scancel: pilot ${pilotId} cancelled; the task resumed at ${resumed} on ${last.host}`);
  }, 240_000);

  it("a pilot whose agent is lost (frozen) is cancelled; its task resumes on a new pilot", async () => {
    const s = server!;
    const script = countingScript(data, 12);
    const submitted = (await api(s, "POST", "/api/v1/jobs", {
      command: ["bash", script],
      checkpoint: { intervalSeconds: 1, graceSeconds: 5 },
    })) as { id: string };
    const first = await runningWithCheckpoint(s, submitted.id);
    const pilotId = first.host.slice(pool.length + 1);
    const { stdout } = await run("pgrep", ["-f", `agent .*--name ${first.host} `]);
    const pids = stdout.trim().split("\n").filter(Boolean).map(Number);
    expect(pids.length).toBeGreaterThan(0);
    for (const pid of pids) process.kill(pid, "SIGSTOP");

    // Lost after the host timeout; the pool cancels the pilot, and the task goes on elsewhere.
    await waitFor(
      "the lost pilot to be cancelled",
      async () => (await driver.list(ownPilots(s.joinToken, pool))).every((pilot) => pilot.id !== pilotId),
      30_000,
      500,
    );
    const job = await waitForJobEnd(s, submitted.id, 120_000);
    const attempts = job.tasks[0].attempts;
    expect(job.state, JSON.stringify(attempts)).toBe("succeeded");
    expect(attempts[0].outcome).toBe("lost");
    const last = attempts.at(-1)!;
    expect(last.host).not.toBe(first.host);
    expect(startedAt(await attemptLog(s, submitted.id, last.number))).toBeGreaterThan(0);
    for (const pid of pids) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {}
    }
  }, 240_000);
});

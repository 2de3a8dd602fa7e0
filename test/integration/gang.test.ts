// Multi-node jobs with real processes: a 3-rank ring across 3 agents (same coordinator, nodes file
// of 3 lines, the right checksum, outputs once); a rank's host crashing mid-run with a spare in the
// restart pool (the gang restarts on the 2 healthy hosts + the spare, every rank resumes from the
// same complete generation, the checksum is unchanged); a rank that exits 1 (the job fails, the
// other ranks are stopped, none left running); a 4-rank gang on 3 hosts waits, with explain naming
// the shortfall, while 1-rank jobs run, and starts when a 4th host joins; a rank above 0 whose last
// lines come just before its end has its whole log in by the time the job has ended.

import { execFile } from "node:child_process";
import { cpSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterEach, describe, expect, it } from "vitest";
import {
  type AgentProcess,
  api,
  cleanup,
  cli,
  getJob,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

const run = promisify(execFile);
const RING = join(import.meta.dirname, "../../examples/ring");
const MODULUS = 1_000_003;

/** The ring's checksum, computed as ring.mjs does it. */
function ringChecksum(ranks: number, iterations: number, size = 8): number {
  let vector = Array.from({ length: size }, (_, j) => j + 1);
  const step = (v: number[], r: number, i: number) =>
    v.map((x, j) => (x * 31 + r * 7 + i * 13 + j) % MODULUS);
  for (let i = 1; i <= iterations; i++) {
    for (let r = 1; r < ranks; r++) vector = step(vector, r, i);
    vector = step(vector, 0, i);
  }
  return vector.reduce((sum, x) => (sum + x) % MODULUS, 0);
}

let server: (StewardProcess & { joinToken: string }) | null = null;
const agents: AgentProcess[] = [];
const folders: string[] = [];

afterEach(async () => {
  for (const agent of agents.splice(0)) await agent.crash();
  await server?.stop();
  cleanup(...folders.splice(0), server?.data ?? "");
  server = null;
});

async function cluster(hosts: { name: string; pool?: string; slots?: number }[], serverArgs: string[] = []) {
  server = await startServerProcess({ heartbeatSeconds: 1, hostTimeoutSeconds: 3, args: serverArgs });
  const s = server;
  for (const { name, pool, slots } of hosts) await addAgent(name, pool, slots);
  await waitFor(
    `${hosts.length} hosts`,
    async () => (await api(s, "GET", "/api/v1/hosts")).length === hosts.length,
  );
  return s;
}

async function addAgent(name: string, pool = "default", slots = 1) {
  const s = server!;
  agents.push(
    await startAgentProcess({
      name,
      slots,
      servers: [s.url],
      joinToken: s.joinToken,
      args: ["--address", "127.0.0.1", "--pool", pool],
    }),
  );
}

async function submitRing(
  s: StewardProcess,
  env: Record<string, string>,
  extra: Record<string, unknown> = {},
): Promise<string> {
  const dir = tempDir("steward-ring-");
  folders.push(dir);
  cpSync(RING, dir, { recursive: true });
  let spec = readFileSync(join(dir, "job.yaml"), "utf8").replace(/^env: .*$/m, `env: ${JSON.stringify(env)}`);
  for (const [key, value] of Object.entries(extra)) {
    spec = spec.replace(new RegExp(`^${key}: .*$`, "m"), "");
    spec += `${key}: ${JSON.stringify(value)}\n`;
  }
  const file = join(dir, "job.yaml");
  (await import("node:fs")).writeFileSync(file, spec);
  const submitted = await cli(s, ["submit", file]);
  expect(submitted.code, submitted.stderr).toBe(0);
  return submitted.stdout.trim();
}

async function rankLog(s: StewardProcess, id: string, rank: number, attempt?: number): Promise<string> {
  const query = `task=0&rank=${rank}${attempt ? `&attempt=${attempt}` : ""}`;
  const response = await fetch(`${s.url}/api/v1/jobs/${id}/logs?${query}`, {
    headers: { authorization: `Bearer ${s.token}` },
  });
  return response.text();
}

async function output(s: StewardProcess, id: string, path: string): Promise<string> {
  const response = await fetch(`${s.url}/api/v1/jobs/${id}/outputs/0/${path}`, {
    headers: { authorization: `Bearer ${s.token}` },
  });
  return (await response.text()).trim();
}

describe("multi-node jobs", () => {
  it("a 3-rank ring across 3 hosts: one coordinator, a nodes file of 3 lines, the right checksum", async () => {
    const s = await cluster([{ name: "h1" }, { name: "h2" }, { name: "h3" }]);
    const env = await api(s, "POST", "/api/v1/jobs", {
      command:
        'cat "$STEWARD_NODES_FILE"; echo "rank=$STEWARD_NODE_RANK of $STEWARD_NODE_COUNT coordinator=$STEWARD_COORDINATOR"',
      nodes: 3,
    });
    const envJob = await waitForJobEnd(s, env.id, 30_000);
    expect(envJob.state).toBe("succeeded");
    const coordinators = new Set<string>();
    for (let rank = 0; rank < 3; rank++) {
      const log = await rankLog(s, env.id, rank);
      const lines = log.trim().split("\n");
      expect(
        lines.slice(0, 3).every((line) => /^127\.0\.0\.1 slots=1 # h\d rank \d$/.test(line)),
        log,
      ).toBe(true);
      const match = /^rank=(\d) of 3 coordinator=(127\.0\.0\.1:\d+)$/.exec(lines[3]);
      expect(match, log).not.toBeNull();
      expect(Number(match![1])).toBe(rank);
      coordinators.add(match![2]);
    }
    expect(coordinators.size).toBe(1);

    const id = await submitRing(s, { RING_ITERATIONS: "10", RING_DELAY_MS: "50" });
    const job = await waitForJobEnd(s, id, 60_000);
    expect(job.state, JSON.stringify(job.events.map((event) => event.message))).toBe("succeeded");
    expect(Number(await output(s, id, "checksum"))).toBe(ringChecksum(3, 10));
    const attempt = job.tasks[0].attempts[0];
    expect(new Set(attempt.placement.map((entry) => entry.host)).size).toBe(3);
    const outputs = (await api(s, "GET", `/api/v1/jobs/${id}/outputs`)) as { path: string }[];
    expect(outputs.map((each) => each.path)).toStrictEqual(["checksum"]);
  }, 90_000);

  it("a rank's host crashes: the gang restarts on the healthy hosts and a spare, from one complete generation", async () => {
    const s = await cluster(
      [{ name: "h1" }, { name: "h2" }, { name: "h3" }, { name: "s4", pool: "spares" }],
      ["--restart-pool", "spares"],
    );
    const iterations = 40;
    const id = await submitRing(s, { RING_ITERATIONS: String(iterations), RING_DELAY_MS: "200" });
    const first = await waitFor(
      "the ring to pass generation 5",
      async () => {
        const job = await getJob(s, id);
        const attempt = job.tasks[0].attempts[0];
        return attempt?.state === "running" && (job.tasks[0].checkpoint?.generation ?? 0) >= 5
          ? attempt
          : null;
      },
      60_000,
      100,
    );
    const hosts = first.placement.map((entry: { host: string }) => entry.host);
    expect(hosts).not.toContain("s4");
    const victim = agents.find((agent) => agent.name === hosts[1])!;
    const crashedAt = Date.now();
    await victim.crash();

    const second = await waitFor(
      "the gang to run again",
      async () => {
        const job = await getJob(s, id);
        const attempt = job.tasks[0].attempts[1];
        return attempt?.state === "running" ? attempt : null;
      },
      30_000,
      100,
    );
    const restartSeconds = (Date.now() - crashedAt) / 1000;
    expect(restartSeconds).toBeLessThan(3 + 3 + 1);
    expect(second.placement.map((entry: { host: string }) => entry.host)).toStrictEqual([
      hosts[0],
      "s4",
      hosts[2],
    ]);
    const job = await waitForJobEnd(s, id, 90_000);
    expect(job.state).toBe("succeeded");
    expect(job.tasks[0].attempts[0].outcome).toBe("lost");
    expect(job.tasks[0].attempts[0].reason).toMatch(new RegExp(`^rank 1 on ${hosts[1]}: `));
    // Every rank of the second attempt resumed from the same generation, past the start.
    const resumed = new Set<number>();
    for (let rank = 0; rank < 3; rank++) {
      const match = /starts at iteration (\d+)/.exec(await rankLog(s, id, rank, 2));
      expect(match).not.toBeNull();
      resumed.add(Number(match![1]));
    }
    expect(resumed.size).toBe(1);
    expect([...resumed][0]).toBeGreaterThan(0);
    expect(Number(await output(s, id, "checksum"))).toBe(ringChecksum(3, iterations));
    console.log(
      `gang: rank 1's host crashed; the gang ran again ${restartSeconds.toFixed(2)} s later on ${second.placement.map((entry: { host: string }) => entry.host).join(",")}, resuming at iteration ${[...resumed][0]}`,
    );
  }, 150_000);

  it("a rank that exits 1 fails the job; the other ranks are stopped, none left running", async () => {
    const s = await cluster([{ name: "h1" }, { name: "h2" }, { name: "h3" }]);
    const marker = `97.${process.pid}`;
    const { id } = await api(s, "POST", "/api/v1/jobs", {
      command: `if [ "$STEWARD_NODE_RANK" = 1 ]; then sleep 1; exit 1; fi; exec sleep ${marker}`,
      nodes: 3,
      checkpoint: { intervalSeconds: 60, graceSeconds: 2 },
    });
    const job = await waitForJobEnd(s, id, 30_000);
    expect(job.state).toBe("failed");
    const attempt = job.tasks[0].attempts[0];
    expect(attempt.outcome).toBe("failed");
    expect(attempt.reason).toMatch(/^rank 1 on h\d: /);
    const left = await run("pgrep", ["-f", `sleep ${marker}`]).then(
      (result) => result.stdout.trim(),
      () => "",
    );
    expect(left).toBe("");
  }, 60_000);

  it("a 4-rank gang on 3 hosts waits, naming the shortfall, while 1-rank jobs run; a 4th host starts it", async () => {
    const s = await cluster([{ name: "h1" }, { name: "h2" }, { name: "h3" }]);
    const gang = await api(s, "POST", "/api/v1/jobs", { command: "sleep 1", nodes: 4 });
    const explained = await waitFor(
      "explain to name the shortfall",
      async () => {
        const answer = (await api(s, "GET", `/api/v1/jobs/${gang.id}/explain`)) as { reasons: string[] };
        return answer.reasons.find((reason) => reason.startsWith("needs 4 hosts")) ?? null;
      },
      10_000,
      100,
    );
    expect(explained).toBe("needs 4 hosts, 3 match, 3 have room");
    const small = await api(s, "POST", "/api/v1/jobs", { command: "true", array: { count: 3 } });
    expect((await waitForJobEnd(s, small.id, 30_000)).state).toBe("succeeded");
    // No partial gang: while it waits, no rank of it has run.
    const waiting = await getJob(s, gang.id);
    expect(waiting.state).toBe("pending");
    expect(waiting.tasks[0].attempts).toStrictEqual([]);
    await addAgent("h4");
    const done = await waitForJobEnd(s, gang.id, 30_000);
    expect(done.state).toBe("succeeded");
    // No partial gang: its one attempt held all 4 hosts from its start.
    expect(done.tasks[0].attempts).toHaveLength(1);
    expect(done.tasks[0].attempts[0].placement).toHaveLength(4);
  }, 60_000);

  it("nodesPerHost 2: a 4-rank ring on 2 hosts of 2 slots, each rank with its own log", async () => {
    const s = await cluster([
      { name: "h1", slots: 2 },
      { name: "h2", slots: 2 },
    ]);
    const id = await submitRing(
      s,
      { RING_ITERATIONS: "8", RING_DELAY_MS: "50" },
      { nodes: 4, nodesPerHost: 2 },
    );
    const job = await waitForJobEnd(s, id, 60_000);
    expect(job.state, JSON.stringify(job.events.map((event) => event.message))).toBe("succeeded");
    expect(job.tasks[0].attempts[0].placement.map((entry) => entry.host).sort()).toStrictEqual([
      "h1",
      "h1",
      "h2",
      "h2",
    ]);
    for (let rank = 0; rank < 4; rank++)
      expect(await rankLog(s, id, rank)).toContain(`rank ${rank} of 4 starts`);
    expect(Number(await output(s, id, "checksum"))).toBe(ringChecksum(4, 8));
  }, 60_000);

  it("outputsFrom: all collects every rank's outputs under rank-N/", async () => {
    const s = await cluster([{ name: "h1" }, { name: "h2" }]);
    const { id } = await api(s, "POST", "/api/v1/jobs", {
      command: 'echo "from $STEWARD_NODE_RANK" > out',
      outputs: ["out"],
      nodes: 2,
      outputsFrom: "all",
    });
    expect((await waitForJobEnd(s, id, 30_000)).state).toBe("succeeded");
    const outputs = (await api(s, "GET", `/api/v1/jobs/${id}/outputs`)) as { path: string }[];
    expect(outputs.map((each) => each.path).sort()).toStrictEqual(["rank-0/out", "rank-1/out"]);
    expect(await output(s, id, "rank-1/out")).toBe("from 1");
  }, 60_000);

  it("a rank above 0 that prints its last lines just before it ends: its whole log is there once the job has ended", async () => {
    const s = await cluster([{ name: "h1" }, { name: "h2" }]);
    // Rank 1 ends last, right after printing about 15 MB: the agent sends them in many chunks just
    // before its end report, and the broker appends each one to the blob store in turn.
    const lines = 2_000_000;
    const { id } = await api(s, "POST", "/api/v1/jobs", {
      command: `if [ "$STEWARD_NODE_RANK" = 1 ]; then sleep 1; seq 1 ${lines}; echo "rank 1 done"; fi`,
      nodes: 2,
    });
    const job = await waitFor(
      `job ${id} to end`,
      async () => {
        const each = await getJob(s, id);
        return ["succeeded", "failed", "cancelled"].includes(each.state) ? each : null;
      },
      60_000,
      10,
    );
    expect(job.state).toBe("succeeded");
    const log = await rankLog(s, id, 1);
    const expected = `${Array.from({ length: lines }, (_, i) => i + 1).join("\n")}\nrank 1 done\n`;
    expect(log.length).toBe(expected.length);
    expect(log.endsWith("\nrank 1 done\n")).toBe(true);
    expect(log === expected).toBe(true);
  }, 90_000);

  it("two 2-rank gangs on 3 hosts never deadlock: both finish", async () => {
    const s = await cluster([{ name: "h1" }, { name: "h2" }, { name: "h3" }]);
    const a = await api(s, "POST", "/api/v1/jobs", { command: "sleep 1", nodes: 2 });
    const b = await api(s, "POST", "/api/v1/jobs", { command: "sleep 1", nodes: 2 });
    for (const id of [a.id, b.id]) {
      const job = await waitForJobEnd(s, id, 30_000);
      expect(job.state).toBe("succeeded");
      for (const attempt of job.tasks[0].attempts) expect(attempt.placement).toHaveLength(2);
    }
  }, 60_000);
});

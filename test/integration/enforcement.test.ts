// Limits that hold, with real cgroups on this host: a job over its memory limit is killed by the
// kernel and ends `failed` with the out-of-memory reason while its neighbour on the same host
// finishes and the agent goes on; a process a job leaves behind in a session of its own is gone
// when the attempt ends (its end, a cancel, a time limit); the agent says at start that it
// enforces, and with --no-enforce that it does not. Needs root and the memory, cpu and pids
// controllers (v1 or v2): without them the test is skipped saying why, and fails under CI.

import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  openEnforcement,
  readLayout,
  removeBase,
  sweepCgroups,
} from "../../src/agent/cgroups/enforcement.ts";
import { enforcementUnavailable, skipUnlessEnforced } from "../helpers/agent-cgroups.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  getJob,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

const unavailable = enforcementUnavailable();
let server: (StewardProcess & { joinToken: string }) | undefined;
let agent: AgentProcess | undefined;
const shared = tempDir("steward-enforce-");

beforeAll(async () => {
  if (unavailable) return;
  server = await startServerProcess();
  agent = await startAgentProcess({
    name: "enforcer",
    slots: 4,
    servers: [server.url],
    joinToken: server.joinToken,
  });
  await waitFor("the agent connected", async () => (await api(server!, "GET", "/api/v1/hosts")).length === 1);
});

afterAll(async () => {
  await agent?.crash();
  await server?.stop();
  cleanup(shared, server?.data ?? "", agent?.work ?? "");
});

/** Whether a process of that pid still runs (a zombie counts as gone). */
function running(pid: number): boolean {
  try {
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, "utf8"));
  } catch {
    return false;
  }
}

it("says at start that it enforces, and how", (context) => {
  skipUnlessEnforced(context, unavailable);
  expect(agent!.output()).toMatch(/enforcing memory, CPU and process limits with cgroup v[12] /);
});

it("a job over its memory limit ends failed, out of memory; its neighbour finishes; the agent goes on", async (context) => {
  skipUnlessEnforced(context, unavailable);
  const s = server!;
  const neighbour = await api(s, "POST", "/api/v1/jobs", {
    command: "sleep 3; echo unharmed",
    resources: { memoryMb: 100 },
  });
  const hog = await api(s, "POST", "/api/v1/jobs", {
    command: ["python3", "-c", "import time; x = bytearray(500 * 2**20); time.sleep(5)"],
    resources: { memoryMb: 100 },
  });
  const ended = await waitForJobEnd(s, hog.id, 30_000);
  expect(ended.state).toBe("failed");
  const attempt = ended.tasks[0].attempts[0];
  expect(attempt.reason).toBe("out of memory: limit 100 MB reached");
  expect((await waitForJobEnd(s, neighbour.id, 30_000)).state).toBe("succeeded");
  expect(agent!.child.exitCode).toBeNull();
  const hosts = (await api(s, "GET", "/api/v1/hosts")) as { connected: boolean }[];
  expect(hosts[0].connected).toBe(true);
});

it.for([
  ["ends by itself", {}, "succeeded"],
  ["is cancelled", { cancel: true }, "cancelled"],
  ["reaches its time limit", { timeLimitSeconds: 2 }, "failed"],
  ["is migrated", { migrate: true }, "cancelled"],
] as const)(
  "a process left in a session of its own is gone when the attempt %s",
  async ([, how, state], context) => {
    skipUnlessEnforced(context, unavailable);
    const s = server!;
    const pidFile = join(shared, `left-${Date.now()}-${Math.random().toString(36).slice(2)}`);
    const body = {
      command: `setsid sleep 300 </dev/null >/dev/null 2>&1 & echo $! > ${pidFile}; ${"cancel" in how || "timeLimitSeconds" in how || "migrate" in how ? "sleep 300" : "sleep 1"}`,
      ...("timeLimitSeconds" in how ? { timeLimitSeconds: how.timeLimitSeconds } : {}),
    };
    const { id } = await api(s, "POST", "/api/v1/jobs", body);
    const pid = await waitFor("the job's detached process", async () => {
      try {
        const text = readFileSync(pidFile, "utf8").trim();
        return text ? Number(text) : null;
      } catch {
        return null;
      }
    });
    expect(running(pid)).toBe(true);
    if ("cancel" in how) {
      await waitFor("running", async () => (await getJob(s, id)).state === "running");
      await api(s, "POST", `/api/v1/jobs/${id}/cancel`);
    }
    if ("migrate" in how) {
      // Its attempt stops for a move to another host (one joins for it: a migration with nowhere
      // to go is refused), then the job is cancelled; the process is gone once the migrated
      // attempt has ended.
      await waitFor("running", async () => (await getJob(s, id)).state === "running");
      const spare = await startAgentProcess({
        name: "enforcer-spare",
        slots: 4,
        servers: [s.url],
        joinToken: s.joinToken,
      });
      try {
        await waitFor(
          "the spare agent connected",
          async () => (await api(s, "GET", "/api/v1/hosts")).length === 2,
        );
        await api(s, "POST", `/api/v1/jobs/${id}/migrate`, {});
        await waitFor(
          "the attempt migrated",
          async () => (await getJob(s, id)).tasks[0].attempts[0].outcome === "migrated",
        );
        await waitFor("the detached process gone", async () => !running(pid), 5_000);
        await api(s, "POST", `/api/v1/jobs/${id}/cancel`);
        expect((await waitForJobEnd(s, id, 30_000)).state).toBe("cancelled");
      } finally {
        await spare.crash();
        cleanup(spare.work);
        await api(s, "DELETE", "/api/v1/hosts/enforcer-spare").catch(() => undefined);
      }
    }
    const job = await waitForJobEnd(s, id, 30_000);
    expect(job.state).toBe(state);
    await waitFor("the detached process gone", async () => !running(pid), 5_000);
  },
);

it("a job's process that keeps forking in a session of its own is gone with all it forked when the attempt ends", async (context) => {
  skipUnlessEnforced(context, unavailable);
  const s = server!;
  // A sleep of a length no other process has: what the loop forked is found by it.
  const marker = `${300 + Math.floor(Math.random() * 1_000_000) / 1_000_000}`;
  const pidFile = join(shared, `forking-${Date.now()}`);
  const { id } = await api(s, "POST", "/api/v1/jobs", {
    command: `setsid sh -c 'while :; do sleep ${marker} & sleep 0.01; done' </dev/null >/dev/null 2>&1 & echo $! > ${pidFile}; sleep 1`,
  });
  const forked = (): number[] =>
    readdirSync("/proc")
      .filter((name) => /^\d+$/.test(name))
      .filter((pid) => {
        try {
          return (
            readFileSync(`/proc/${pid}/cmdline`, "utf8") === `sleep\0${marker}\0` && running(Number(pid))
          );
        } catch {
          return false;
        }
      })
      .map(Number);
  await waitFor("the loop's first children", async () => forked().length > 5);
  const loop = Number(readFileSync(pidFile, "utf8").trim());
  expect((await waitForJobEnd(s, id, 30_000)).state).toBe("succeeded");
  await waitFor(
    "the loop and all it forked gone",
    async () => !running(loop) && forked().length === 0,
    5_000,
  );
});

it("an attempt's cgroup is made in the v1 hierarchies it needs: devices only on a host with GPUs, no freezer", (context) => {
  skipUnlessEnforced(context, unavailable);
  const found = readLayout();
  if (!("layout" in found) || found.layout.version !== 1)
    return context.skip(
      `this machine's controllers are on cgroup ${"layout" in found ? `v${found.layout.version}` : "neither version"}, not v1: the v1 hierarchies are checked where they are`,
    );
  const layout = found.layout;
  const hierarchies = (gpus: boolean): string[] => {
    const chosen = openEnforcement("hierarchies", tempDir("steward-hierarchies-"), layout, gpus);
    if (!("enforcement" in chosen)) throw new Error(chosen.unavailable);
    removeBase(chosen.enforcement);
    const base = chosen.enforcement.base;
    return base.version === 1 ? Object.keys(base.dirs).sort() : [];
  };
  const needed = (["cpu", "cpuacct", "memory", "pids"] as const).filter((c) => layout.dirs[c] !== undefined);
  expect(hierarchies(false)).toEqual(needed);
  if (layout.dirs.devices !== undefined) expect(hierarchies(true)).toEqual([...needed, "devices"].sort());
});

it("a restarted agent removes an earlier run's cgroup in every hierarchy, killing what is left in it", async (context) => {
  skipUnlessEnforced(context, unavailable);
  const found = readLayout();
  if (!("layout" in found)) throw new Error(found.unavailable);
  const work = tempDir("steward-sweep-");
  // The earlier run had GPUs (its attempts' cgroups had devices directories where mounted) ...
  const earlier = openEnforcement("sweep", work, found.layout, true);
  if (!("enforcement" in earlier)) throw new Error(earlier.unavailable);
  const left = earlier.enforcement.attempt("ended-attempt");
  left.create({ cpus: 1 });
  const child = spawn("/bin/sh", ["-c", `${left.joinScript()}exec sleep 300`], { stdio: "ignore" });
  await waitFor("the process in the cgroup", async () => left.processes().length === 1);
  // ... this one has none: it sweeps what is not its live attempts' all the same.
  const now = openEnforcement("sweep", work, found.layout, false);
  if (!("enforcement" in now)) throw new Error(now.unavailable);
  expect(await sweepCgroups(now.enforcement, new Set())).toBe(1);
  await waitFor("the process gone", async () => child.exitCode !== null || child.signalCode !== null, 5_000);
  for (const dir of left.dirs) expect(existsSync(dir)).toBe(false);
  removeBase(now.enforcement);
});

it("an agent with --no-enforce says so and reports host.enforces false; a job requiring it goes to the enforcing host", async (context) => {
  skipUnlessEnforced(context, unavailable);
  const s = server!;
  const lax = await startAgentProcess({
    name: "lax",
    slots: 4,
    servers: [s.url],
    joinToken: s.joinToken,
    args: ["--no-enforce"],
  });
  try {
    await waitFor("both agents connected", async () => {
      const hosts = (await api(s, "GET", "/api/v1/hosts")) as { connected: boolean }[];
      return hosts.filter((host) => host.connected).length === 2;
    });
    expect(lax.output()).toContain("not enforcing resource limits: --no-enforce");
    const hosts = (await api(s, "GET", "/api/v1/hosts")) as { name: string; facts: { enforces?: boolean } }[];
    expect(Object.fromEntries(hosts.map((host) => [host.name, host.facts.enforces]))).toEqual({
      enforcer: true,
      lax: false,
    });
    const ids: string[] = [];
    for (let i = 0; i < 4; i++)
      ids.push(
        (await api(s, "POST", "/api/v1/jobs", { command: "sleep 1", requirements: "host.enforces" })).id,
      );
    for (const id of ids) {
      const job = await waitForJobEnd(s, id, 30_000);
      expect(job.state).toBe("succeeded");
      expect(job.tasks[0].attempts[0].host).toBe("enforcer");
    }
  } finally {
    await lax.crash();
    cleanup(lax.work);
  }
});

it("a restarted agent finds a running attempt's cgroup by the name its start.json gives (a kept one's), and leaves it be", async (context) => {
  skipUnlessEnforced(context, unavailable);
  const own = await startServerProcess({ heartbeatSeconds: 1, hostTimeoutSeconds: 10 });
  const options = { name: "keeper", slots: 1, servers: [own.url], joinToken: own.joinToken };
  const first = await startAgentProcess(options);
  let again: AgentProcess | null = null;
  try {
    // A short job first: its emptied cgroup is kept, under its own name.
    const short = await api(own, "POST", "/api/v1/jobs", { command: "true" });
    expect((await waitForJobEnd(own, short.id, 30_000)).state).toBe("succeeded");
    // The next attempt takes that cgroup; its start.json names it.
    const { id } = await api(own, "POST", "/api/v1/jobs", {
      command: "sleep 3; i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done",
    });
    const startJson = join(first.work, "attempts", `${id}.0.1`, "start.json");
    const named = await waitFor("the attempt's start.json", () => {
      try {
        return (JSON.parse(readFileSync(startJson, "utf8")) as { cgroup?: string }).cgroup ?? null;
      } catch {
        return null;
      }
    });
    expect(named).toBe(`${short.id}.0.1`);
    await waitFor("running", async () => (await getJob(own, id)).state === "running");
    await first.kill9();
    again = await startAgentProcess({ ...options, work: first.work });
    // Not swept (the job would have been killed: exit code 137), and measured from that cgroup.
    const job = await waitForJobEnd(own, id, 60_000);
    expect(job.state).toBe("succeeded");
    expect(job.tasks[0].attempts).toHaveLength(1);
    const usage = job.tasks[0].attempts[0].usage!;
    expect(usage.userSeconds! + usage.systemSeconds!).toBeGreaterThan(0.05);
    expect(usage.peakMemoryMb).not.toBeNull();
  } finally {
    await (again ?? first).crash();
    await own.stop();
    cleanup(own.data, first.work);
  }
}, 90_000);

// The cgroup v2 code path of an attempt's cgroup. Its core (join, CPU time from cpu.stat, kill
// everything with cgroup.kill, remove) needs no controller, so it runs wherever a unified tree is
// mounted and root may write it, as here beside the v1 hierarchies. Its limits (memory.max,
// cpu.max, pids.max) need the memory, cpu and pids controllers in the unified tree: checked where
// a machine has them, skipped with a message where v1 holds them (as on this project's CI machine).

import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmdirSync } from "node:fs";
import { afterAll, expect, it } from "vitest";
import { AttemptCgroup } from "../../src/agent/cgroups/attempt-cgroup.ts";
import { cgroupMounts, directoryOf, ownCgroups } from "../../src/agent/cgroups/cgroup-layout.ts";
import { openEnforcement, readLayout } from "../../src/agent/cgroups/enforcement.ts";
import { tempDir, waitFor } from "../helpers/steward.ts";

/** This process's directory in the unified tree, or why there is none to use. */
function unifiedDir(): { dir: string } | { unavailable: string } {
  if (process.getuid?.() !== 0) return { unavailable: "making cgroups needs root" };
  const unified = cgroupMounts(readFileSync("/proc/self/mountinfo", "utf8")).find(
    (mount) => mount.version === 2,
  );
  const path = ownCgroups(readFileSync("/proc/self/cgroup", "utf8")).get("");
  if (!unified || path === undefined) return { unavailable: "no unified (v2) cgroup tree is mounted" };
  const dir = directoryOf(unified, path);
  return dir === null ? { unavailable: "this process's unified cgroup is not under the mount" } : { dir };
}

const made: string[] = [];
afterAll(() => {
  for (const dir of made.reverse()) {
    try {
      rmdirSync(dir);
    } catch {}
  }
});

it("v2 core: a job's processes join, its CPU time is read, every process (one in a session of its own too) is killed, the cgroup removed", async (context) => {
  const found = unifiedDir();
  if ("unavailable" in found) {
    if (process.env.CI) throw new Error(found.unavailable);
    context.skip(found.unavailable);
    return;
  }
  const base = `${found.dir}/steward-v2-test-${process.pid}`;
  mkdirSync(base);
  made.push(base);
  const cgroup = new AttemptCgroup({ version: 2, dir: base }, "attempt");
  mkdirSync(cgroup.dirs[0]);
  const script = `${cgroup.joinScript()}i=0; while [ $i -lt 30000 ]; do i=$((i+1)); done; setsid sleep 300 </dev/null >/dev/null 2>&1 & exec sleep 300`;
  const job = spawn("/bin/sh", ["-c", script], { stdio: "ignore", detached: true });
  const exited = new Promise((done) => job.once("exit", done));
  await waitFor("the job and its detached child in the cgroup", async () => cgroup.processes().length >= 2);
  expect(cgroup.processes()).toContain(job.pid);
  const { cpu } = cgroup.usage();
  expect(cpu?.userMs ?? 0).toBeGreaterThan(0);
  expect(await cgroup.killAll()).toBe(true);
  expect(cgroup.processes()).toEqual([]);
  await exited;
  expect(await cgroup.remove()).toBe(true);
  expect(() => readFileSync(`${cgroup.dirs[0]}/cgroup.procs`)).toThrow();
});

it("v2 limits: memory.max with no swap, cpu.max and pids.max, and the out-of-memory kill counted", async (context) => {
  const found = readLayout();
  if ("unavailable" in found || found.layout.version !== 2) {
    context.skip(
      "the unified tree here offers no memory, cpu and pids controllers (cgroup v1 holds them): the v2 limits are checked on a machine where it does",
    );
    return;
  }
  const chosen = openEnforcement("v2-test", tempDir("steward-v2-"), found.layout);
  if ("unavailable" in chosen) throw new Error(chosen.unavailable);
  const cgroup = chosen.enforcement.attempt("attempt");
  cgroup.create({ memoryMb: 50, cpus: 1, maxProcesses: 32 });
  const dir = cgroup.dirs[0];
  expect(readFileSync(`${dir}/memory.max`, "utf8").trim()).toBe(String(50 * 2 ** 20));
  expect(readFileSync(`${dir}/memory.swap.max`, "utf8").trim()).toBe("0");
  expect(readFileSync(`${dir}/cpu.max`, "utf8").trim()).toBe("100000 100000");
  expect(readFileSync(`${dir}/pids.max`, "utf8").trim()).toBe("32");
  const job = spawn("/bin/sh", ["-c", `${cgroup.joinScript()}exec python3 -c 'x = bytearray(200 * 2**20)'`], {
    stdio: "ignore",
  });
  await new Promise((done) => job.once("exit", done));
  expect(cgroup.oomKills()).toBeGreaterThan(0);
  expect(await cgroup.remove()).toBe(true);
});

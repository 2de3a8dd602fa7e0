// Emptied attempt cgroups kept for reuse (src/agent/cgroups/spare-cgroups.ts), on this host's real cgroups
// (v1): an attempt's cgroup that ended empty is kept, under its name, with its peak and CPU time
// reset; the next attempt takes it (its name with it), with its own limits and counters from zero;
// a new cgroup never takes a name a cgroup still holds; one that saw an out-of-memory kill is
// removed, not kept; a kept one removed by hand meanwhile is made again; an agent that stops
// removes what it kept. Needs root and v1's memory, cpu, cpuacct and pids
// controllers: skipped saying why otherwise (and fails under CI where they should be).

import { spawn } from "node:child_process";
import { existsSync, readFileSync, rmdirSync } from "node:fs";
import { afterAll, describe, expect, it } from "vitest";
import {
  type Enforcement,
  openEnforcement,
  readLayout,
  removeBase,
} from "../../src/agent/cgroups/enforcement.ts";
import { mayKeepCgroup, SPARE_CGROUP_MAX_CHARGED_BYTES } from "../../src/agent/cgroups/spare-cgroups.ts";
import { enforcementUnavailable, skipUnlessEnforced } from "../helpers/agent-cgroups.ts";
import { cleanup, tempDir } from "../helpers/steward.ts";

const unavailable = enforcementUnavailable();
const work = tempDir("steward-spare-cgroups-");
let enforcement: Enforcement | undefined;

afterAll(() => {
  if (enforcement) removeBase(enforcement);
  cleanup(work);
});

describe("which ended cgroups may be kept", () => {
  it.each([
    ["empty, no kill, little charged", { processes: 0, oomKills: 0, chargedBytes: 4096 }, true],
    ["a process left", { processes: 1, oomKills: 0, chargedBytes: 0 }, false],
    ["an out-of-memory kill counted", { processes: 0, oomKills: 1, chargedBytes: 0 }, false],
    [
      "much memory still charged",
      { processes: 0, oomKills: 0, chargedBytes: SPARE_CGROUP_MAX_CHARGED_BYTES },
      false,
    ],
    ["charge unknown", { processes: 0, oomKills: 0, chargedBytes: null }, false],
  ])("%s", (_, remains, expected) => {
    expect(mayKeepCgroup(remains)).toBe(expected);
  });
});

/** Runs `script` in the cgroup and waits for it to end; its exit code. */
function runIn(joinScript: string, script: string): Promise<number | null> {
  return new Promise((done) => {
    spawn("/bin/sh", ["-c", `${joinScript}${script}`], { stdio: "ignore" }).on("exit", (code) => done(code));
  });
}

const read = (path: string) => readFileSync(path, "utf8").trim();

it("keeps an emptied cgroup and gives it, reset, to the next attempt; not one with an out-of-memory kill", async (context) => {
  skipUnlessEnforced(context, unavailable);
  const found = readLayout();
  if (!("layout" in found)) throw new Error(found.unavailable);
  if (found.layout.version !== 1) return context.skip("spare cgroups are kept in cgroup v1 only");
  const opened = openEnforcement("spares", work, found.layout, false);
  if (!("enforcement" in opened)) throw new Error(opened.unavailable);
  enforcement = opened.enforcement;
  const spares = enforcement.spares!;

  // The first attempt: a 50 MB limit, some CPU burnt.
  const first = enforcement.newAttempt("first");
  expect(first.name).toBe("first");
  first.create({ memoryMb: 50, cpus: 1 });
  const memory = first.dirFor("memory")!;
  expect(read(`${memory}/memory.limit_in_bytes`)).toBe(String(50 * 1024 * 1024));
  expect(await runIn(first.joinScript(), "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done")).toBe(0);
  expect(first.usage().cpu!.userMs + first.usage().cpu!.systemMs).toBeGreaterThan(0);
  expect(await first.remove()).toBe(true);
  // Kept as it is, under its name: nothing renamed.
  expect(spares.size).toBe(1);
  for (const dir of first.dirs) expect(existsSync(dir)).toBe(true);

  // The next attempt takes it, its name with it: no memory limit of the first's, counters reset.
  const second = enforcement.newAttempt("second");
  expect(second.name).toBe("first");
  second.create({ cpus: 1 });
  expect(spares.size).toBe(0);
  const reused = second.dirFor("memory")!;
  expect(Number(read(`${reused}/memory.limit_in_bytes`))).toBeGreaterThan(2 ** 60);
  expect(Number(read(`${reused}/memory.max_usage_in_bytes`))).toBeLessThan(SPARE_CGROUP_MAX_CHARGED_BYTES);
  expect(second.usage().cpu).toEqual({ userMs: 0, systemMs: 0 });
  expect(second.oomKills()).toBe(0);

  // An attempt whose folder has the name a cgroup still holds gets another name.
  const again = enforcement.newAttempt("first");
  expect(again.name).toBe("first~1");
  again.create({ cpus: 1 });
  for (const dir of again.dirs) expect(existsSync(dir)).toBe(true);
  expect(await again.remove()).toBe(true);

  // Over its limit: killed by the kernel; that cgroup is removed, not kept.
  const kept = spares.size;
  const third = enforcement.newAttempt("third");
  expect(third.name).toBe("first~1");
  third.create({ memoryMb: 20, cpus: 1 });
  expect(spares.size).toBe(kept - 1);
  await runIn(third.joinScript(), "exec head -c 200000000 /dev/zero | tail -c 1 >/dev/null");
  await runIn(third.joinScript(), `exec awk 'BEGIN { s = sprintf("%200000000s", ""); print length(s) }'`);
  expect(third.oomKills()).toBeGreaterThan(0);
  expect(await second.remove()).toBe(true);
  expect(await third.remove()).toBe(true);
  expect(spares.size).toBe(1);
  for (const dir of third.dirs) expect(existsSync(dir)).toBe(false);

  // A kept cgroup removed by hand meanwhile: the attempt that takes it makes it again.
  for (const dir of second.dirs) rmdirSync(dir);
  const fourth = enforcement.newAttempt("fourth");
  expect(fourth.name).toBe("first");
  fourth.create({ memoryMb: 30, cpus: 1 });
  expect(read(`${fourth.dirFor("memory")!}/memory.limit_in_bytes`)).toBe(String(30 * 1024 * 1024));
  expect(await fourth.remove()).toBe(true);

  // An agent that stops leaves nothing: the kept ones go with its base.
  const keptDirs = spares.dirsOf("first");
  for (const dir of keptDirs) expect(existsSync(dir)).toBe(true);
  removeBase(enforcement);
  for (const dir of keptDirs) expect(existsSync(dir)).toBe(false);
  expect(spares.size).toBe(0);
  enforcement = undefined;
});

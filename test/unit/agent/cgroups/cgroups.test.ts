// Where an agent's attempts' cgroups go (from mountinfo and /proc/self/cgroup texts) and what they
// are set to, by cgroup version: tables of cases, no cgroup touched.

import { describe, expect, it } from "vitest";
import { cgroupLayout, cgroupMounts, ownCgroups } from "../../../../src/agent/cgroups/cgroup-layout.ts";
import {
  CPU_PERIOD_US,
  cgroupSettings,
  cpuTimeFromCpuacct,
  cpuTimeFromCpuStat,
  oomKillCount,
  settingsToWrite,
  writtenSettings,
} from "../../../../src/agent/cgroups/cgroup-limits.ts";
import { baseName } from "../../../../src/agent/cgroups/enforcement.ts";
import { DEFAULT_MAX_PROCESSES } from "../../../../src/common/model/job-spec.ts";

/** A host with v1 hierarchies (as this project's CI machine has) and a unified tree with no controllers. */
const HYBRID_MOUNTS = `31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
`;
const HYBRID_SELF = `9:name=systemd:/
8:pids:/
6:freezer:/
4:memory:/process_api/abc
2:cpuacct:/
1:cpu:/
0::/
`;
/** systemd's usual v1 layout: cpu and cpuacct mounted together. */
const COMOUNTED = `25 24 0:22 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct
26 24 0:23 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory
27 24 0:24 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids
`;
const COMOUNTED_SELF = `3:cpu,cpuacct:/system.slice/steward-agent.service
2:memory:/system.slice/steward-agent.service
1:pids:/system.slice/steward-agent.service
`;
const V2_MOUNTS = "30 24 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n";
const V2_SELF = "0::/system.slice/steward-agent.service\n";
/** A container whose cgroup namespace shows its own cgroup as the root of the mount. */
const CONTAINER_MOUNTS = "400 390 0:26 /docker/123 /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n";

describe("where attempts' cgroups go", () => {
  it.each([
    [
      "v1 hierarchies, memory in a cgroup of its own, unified tree without controllers",
      HYBRID_MOUNTS,
      HYBRID_SELF,
      "hugetlb",
      {
        layout: {
          version: 1,
          dirs: {
            cpu: "/sys/fs/cgroup/cpu",
            cpuacct: "/sys/fs/cgroup/cpuacct",
            memory: "/sys/fs/cgroup/memory/process_api/abc",
            freezer: "/sys/fs/cgroup/freezer",
            pids: "/sys/fs/cgroup/pids",
          },
        },
      },
    ],
    [
      "v1 with cpu and cpuacct mounted together, under a service",
      COMOUNTED,
      COMOUNTED_SELF,
      null,
      {
        layout: {
          version: 1,
          dirs: {
            cpu: "/sys/fs/cgroup/cpu,cpuacct/system.slice/steward-agent.service",
            cpuacct: "/sys/fs/cgroup/cpu,cpuacct/system.slice/steward-agent.service",
            memory: "/sys/fs/cgroup/memory/system.slice/steward-agent.service",
            pids: "/sys/fs/cgroup/pids/system.slice/steward-agent.service",
          },
        },
      },
    ],
    [
      "v2, delegated to the service",
      V2_MOUNTS,
      V2_SELF,
      "cpuset cpu io memory pids",
      { layout: { version: 2, dir: "/sys/fs/cgroup/system.slice/steward-agent.service" } },
    ],
    [
      "v2 in a container: the mount's root is the container's cgroup",
      CONTAINER_MOUNTS,
      "0::/docker/123/agent\n",
      "memory cpu pids",
      { layout: { version: 2, dir: "/sys/fs/cgroup/agent" } },
    ],
    [
      "v2 without pids",
      V2_MOUNTS,
      V2_SELF,
      "cpu memory",
      {
        unavailable:
          "no cgroup controllers for memory, cpu, pids: the unified (v2) tree offers cpu, memory, and no v1 hierarchy has memory, cpu, pids",
      },
    ],
    [
      "nothing mounted",
      "1 0 0:1 / / rw - ext4 /dev/sda1 rw\n",
      "0::/\n",
      null,
      {
        unavailable:
          "no cgroup controllers for memory, cpu, pids: no unified (v2) tree is mounted, and no v1 hierarchy has memory, cpu, pids",
      },
    ],
  ] as const)("%s", (_, mounts, self, offered, expected) => {
    expect(cgroupLayout(mounts, self, offered)).toEqual(expected);
  });

  it("reads mountinfo's escapes and /proc/self/cgroup's lines", () => {
    const [mount] = cgroupMounts("5 1 0:9 / /sys/fs/cg\\040roup/memory rw - cgroup cgroup rw,memory\n");
    expect(mount).toEqual({
      root: "/",
      mountPoint: "/sys/fs/cg roup/memory",
      version: 1,
      controllers: ["memory"],
    });
    expect(ownCgroups(HYBRID_SELF).get("memory")).toBe("/process_api/abc");
    expect(ownCgroups(HYBRID_SELF).get("")).toBe("/");
  });

  it("names an agent's base by its name and work folder, never two agents the same", () => {
    expect(baseName("node1", "/var/lib/steward/agent/node1")).toMatch(/^steward-node1-[0-9a-f]{8}$/);
    expect(baseName("node1", "/a")).not.toBe(baseName("node1", "/b"));
    expect(baseName("../x y", "/a")).toMatch(/^steward-\.\._x_y-/);
  });
});

describe("what an attempt's cgroup is set to", () => {
  it.each([
    [
      "v1, memory and swap",
      1,
      { memoryMb: 100, cpus: 2 },
      true,
      [
        ["memory", "memory.limit_in_bytes", String(100 * 2 ** 20)],
        ["memory", "memory.memsw.limit_in_bytes", String(100 * 2 ** 20)],
        ["cpu", "cpu.cfs_period_us", String(CPU_PERIOD_US)],
        ["cpu", "cpu.cfs_quota_us", "200000"],
        ["pids", "pids.max", String(DEFAULT_MAX_PROCESSES)],
      ],
    ],
    [
      "v1 where swap is not accounted, no memory asked",
      1,
      { cpus: 1, maxProcesses: 64 },
      false,
      [
        ["cpu", "cpu.cfs_period_us", "100000"],
        ["cpu", "cpu.cfs_quota_us", "100000"],
        ["pids", "pids.max", "64"],
      ],
    ],
    [
      "v2",
      2,
      { memoryMb: 1.5, cpus: 4 },
      true,
      [
        ["memory", "memory.max", String(Math.ceil(1.5 * 2 ** 20))],
        ["memory", "memory.swap.max", "0"],
        ["cpu", "cpu.max", "400000 100000"],
        ["pids", "pids.max", "4096"],
      ],
    ],
  ] as const)("%s", (_, version, limits, swap, expected) => {
    expect(
      cgroupSettings(version, limits, swap).map((setting) => [
        setting.controller,
        setting.file,
        setting.value,
      ]),
    ).toEqual(expected);
  });

  it.each([
    ["oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", 3],
    ["low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n", 1],
    ["oom_kill_disable 0\nunder_oom 0\n", 0],
  ])("out-of-memory kills in %j: %d", (text, count) => {
    expect(oomKillCount(text)).toBe(count);
  });

  it("reads CPU time from v2's cpu.stat and v1's cpuacct", () => {
    expect(cpuTimeFromCpuStat("usage_usec 3500000\nuser_usec 3000000\nsystem_usec 500000\n")).toEqual({
      userMs: 3000,
      systemMs: 500,
    });
    expect(cpuTimeFromCpuStat("usage_usec 1\n")).toBeNull();
    expect(cpuTimeFromCpuacct("2000000000\n", "1000000\n")).toEqual({ userMs: 2000, systemMs: 1 });
    expect(cpuTimeFromCpuacct("", "")).toBeNull();
  });
});

describe("what a kept cgroup is written when the next attempt takes it (v1)", () => {
  const MB = 1024 * 1024;
  const limits = (memoryMb?: number, cpus = 1) => cgroupSettings(1, { cpus, memoryMb }, true);
  const writes = (before: ReturnType<typeof limits>, after: ReturnType<typeof limits>) =>
    settingsToWrite(writtenSettings(before), after).map((s) => `${s.file}=${s.value}`);

  it.each([
    ["the same limits: nothing", limits(100), limits(100), []],
    ["no memory limit either time: nothing", limits(), limits(), []],
    ["another CPU quota: that alone", limits(100, 1), limits(100, 2), ["cpu.cfs_quota_us=200000"]],
    [
      "a memory limit where there was none: both, memory first",
      limits(),
      limits(100),
      [`memory.limit_in_bytes=${100 * MB}`, `memory.memsw.limit_in_bytes=${100 * MB}`],
    ],
    [
      "none where there was one: both lifted, memory+swap first",
      limits(100),
      limits(),
      ["memory.memsw.limit_in_bytes=-1", "memory.limit_in_bytes=-1"],
    ],
    [
      "a higher one: lifted, then written as on a new cgroup",
      limits(100),
      limits(200),
      [
        "memory.memsw.limit_in_bytes=-1",
        "memory.limit_in_bytes=-1",
        `memory.limit_in_bytes=${200 * MB}`,
        `memory.memsw.limit_in_bytes=${200 * MB}`,
      ],
    ],
  ])("%s", (_what, before, after, expected) => {
    expect(writes(before, after)).toEqual(expected);
  });

  it("writes everything a cgroup needs to hold `wanted`, whatever it held", () => {
    // After the writes, the cgroup holds what `wanted` says, file by file (a lifted limit: -1).
    const cases = [limits(), limits(100), limits(200, 2), limits(50, 3)];
    for (const before of cases)
      for (const after of cases) {
        const files = new Map(writtenSettings(before));
        for (const write of settingsToWrite(writtenSettings(before), after))
          files.set(`${write.controller}/${write.file}`, write.value);
        for (const [key, value] of files) if (value === "-1") files.delete(key);
        expect(files).toEqual(writtenSettings(after));
      }
  });
});

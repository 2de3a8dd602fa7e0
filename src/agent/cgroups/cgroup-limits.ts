// What an attempt's cgroup is set to, by cgroup version: its memory limit with no swap beyond it,
// its CPU quota over the period, its process limit, and in v1 the host's GPUs it may not open (the
// devices controller; v2 has no devices files, only BPF programs, which the agent does not load).
// Pure: the files and values to write, in order.

import { DEFAULT_MAX_PROCESSES } from "../../common/model/job-spec.ts";

/** The CPU quota's period, in µs: the kernel's default (cpu.cfs_period_us, cpu.max). */
export const CPU_PERIOD_US = 100_000;

export interface AttemptLimits {
  /** MB; 0 or absent: no memory limit. */
  memoryMb?: number | undefined;
  /** CPUs' worth of time per period. */
  cpus: number;
  maxProcesses?: number | undefined;
  /** The host's GPU ids (/dev/nvidiaN) not given to the attempt: v1's devices controller denies them. */
  deniedGpus?: readonly string[];
}

/** The character devices' major number of NVIDIA GPUs (/dev/nvidiaN is 195:N). */
export const NVIDIA_MAJOR = 195;

/** One setting: a controller's file in the attempt's cgroup and what is written to it. */
export interface CgroupSetting {
  controller: "memory" | "cpu" | "pids" | "devices";
  file: string;
  value: string;
}

export function memoryLimitBytes(memoryMb: number): number {
  return Math.ceil(memoryMb * 1024 * 1024);
}

/**
 * The settings for `limits`. v1 writes memory+swap after memory (the kernel refuses a memsw limit
 * below the memory limit) and only where the kernel accounts swap (`swapAccounted`).
 */
export function cgroupSettings(version: 1 | 2, limits: AttemptLimits, swapAccounted = true): CgroupSetting[] {
  const settings: CgroupSetting[] = [];
  const quota = String(Math.round(limits.cpus * CPU_PERIOD_US));
  const processes = String(limits.maxProcesses ?? DEFAULT_MAX_PROCESSES);
  const memory = limits.memoryMb ? String(memoryLimitBytes(limits.memoryMb)) : null;
  if (version === 2) {
    if (memory) {
      settings.push({ controller: "memory", file: "memory.max", value: memory });
      settings.push({ controller: "memory", file: "memory.swap.max", value: "0" });
    }
    settings.push({ controller: "cpu", file: "cpu.max", value: `${quota} ${CPU_PERIOD_US}` });
    settings.push({ controller: "pids", file: "pids.max", value: processes });
    return settings;
  }
  if (memory) {
    settings.push({ controller: "memory", file: "memory.limit_in_bytes", value: memory });
    if (swapAccounted)
      settings.push({ controller: "memory", file: "memory.memsw.limit_in_bytes", value: memory });
  }
  settings.push({ controller: "cpu", file: "cpu.cfs_period_us", value: String(CPU_PERIOD_US) });
  settings.push({ controller: "cpu", file: "cpu.cfs_quota_us", value: quota });
  settings.push({ controller: "pids", file: "pids.max", value: processes });
  for (const id of limits.deniedGpus ?? [])
    settings.push({ controller: "devices", file: "devices.deny", value: `c ${NVIDIA_MAJOR}:${id} rwm` });
  return settings;
}

/** What was last written to a cgroup's files, by `controller/file`: a kept cgroup's settings (v1). */
export type WrittenSettings = ReadonlyMap<string, string>;

function settingKey(setting: CgroupSetting): string {
  return `${setting.controller}/${setting.file}`;
}

/** The settings as written: what a cgroup holds once they are. */
export function writtenSettings(settings: readonly CgroupSetting[]): WrittenSettings {
  return new Map(settings.map((setting) => [settingKey(setting), setting.value]));
}

/**
 * The writes that give a kept cgroup (v1), whose files hold `written`, the settings `wanted`
 * (cgroupSettings): only the values that differ. The memory limits are written together or not
 * at all: when they change, both are lifted first (memory+swap first: it may never be below the
 * memory limit), then the new ones written in order, as on a new cgroup.
 */
export function settingsToWrite(written: WrittenSettings, wanted: readonly CgroupSetting[]): CgroupSetting[] {
  const isMemory = (setting: CgroupSetting) => setting.controller === "memory";
  const memoryWanted = wanted.filter(isMemory);
  const memoryWritten = [...written].filter(([key]) => key.startsWith("memory/"));
  const memorySame =
    memoryWanted.length === memoryWritten.length &&
    memoryWanted.every((setting) => written.get(settingKey(setting)) === setting.value);
  const writes: CgroupSetting[] = [];
  if (!memorySame) {
    for (const file of ["memory.memsw.limit_in_bytes", "memory.limit_in_bytes"])
      if (written.has(`memory/${file}`)) writes.push({ controller: "memory", file, value: "-1" });
    writes.push(...memoryWanted);
  }
  for (const setting of wanted)
    if (!isMemory(setting) && written.get(settingKey(setting)) !== setting.value) writes.push(setting);
  return writes;
}

/** The count of out-of-memory kills in a memory.oom_control (v1) or memory.events (v2) text. */
export function oomKillCount(text: string): number {
  const match = /^oom_kill (\d+)$/m.exec(text);
  return match ? Number(match[1]) : 0;
}

/** CPU time used, in ms. */
export interface CpuTime {
  userMs: number;
  systemMs: number;
}

/** v2's cpu.stat (user_usec, system_usec). */
export function cpuTimeFromCpuStat(text: string): CpuTime | null {
  const user = /^user_usec (\d+)$/m.exec(text);
  const system = /^system_usec (\d+)$/m.exec(text);
  if (!user || !system) return null;
  return { userMs: Number(user[1]) / 1000, systemMs: Number(system[1]) / 1000 };
}

/** v1's cpuacct.usage_user and cpuacct.usage_sys (ns). */
export function cpuTimeFromCpuacct(userNs: string, systemNs: string): CpuTime | null {
  const user = Number(userNs.trim());
  const system = Number(systemNs.trim());
  if (!Number.isFinite(user) || !Number.isFinite(system) || userNs.trim() === "") return null;
  return { userMs: user / 1e6, systemMs: system / 1e6 };
}

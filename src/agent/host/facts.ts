// Host facts (the `host` of requirements and rank), read from the operating system at each heartbeat.

import os from "node:os";
import type { HostFacts } from "../../common/model/host-facts.ts";
import type { DiskReading } from "./disk-watch.ts";

export interface StaticFacts {
  name: string;
  pool: string;
  labels: Record<string, string>;
  speed: number;
  workDir: string;
  /** Whether attempts' limits are enforced (known once the agent has started). */
  enforces?: boolean;
  /** GPU device ids offered to jobs (--gpus). */
  gpus?: string[];
  /** With GPUs: whether each attempt is kept from the others (a devices cgroup). */
  gpusIsolated?: boolean;
  /** Countable resources offered to jobs (--resource). */
  resources?: Record<string, number>;
  /** Folders shared with the other hosts (--shared), where jobs run in place; sent even when empty. */
  shared: string[];
  /** What the agent moves itself besides the server's files (model/transfers.ts). */
  transfers?: readonly string[];
  /** The container runtime the agent found (containers/runtime.ts), or why it found none. */
  containers?: { runtime: string; path: string; version: string };
  containersUnavailable?: string;
}

function normalizeArch(arch: string): string {
  if (arch === "x64") return "x86_64";
  if (arch === "arm64") return "aarch64";
  if (arch === "ia32") return "i686";
  return arch;
}

/** The facts of now: `disk` is the work folder's space as the agent's DiskWatch read it. */
export function readHostFacts(fixed: StaticFacts, slotsFree: number, disk: DiskReading): HostFacts {
  const cpus = os.availableParallelism();
  const load1 = os.loadavg()[0];
  return {
    name: fixed.name,
    pool: fixed.pool,
    os: os.platform(),
    arch: normalizeArch(os.arch()),
    cpus,
    memoryMb: Math.floor(os.totalmem() / 2 ** 20),
    memFreeMb: Math.floor(os.freemem() / 2 ** 20),
    load1: Math.round(load1 * 100) / 100,
    cpuFree: Math.max(0, Math.min(1, 1 - load1 / cpus)),
    diskFreeMb: disk.freeMb,
    diskFull: disk.full,
    diskMinFreeMb: disk.minFreeMb,
    speed: fixed.speed,
    labels: fixed.labels,
    slotsFree,
    enforces: fixed.enforces ?? false,
    ...(fixed.gpus ? { gpus: fixed.gpus } : {}),
    ...(fixed.gpusIsolated !== undefined ? { gpusIsolated: fixed.gpusIsolated } : {}),
    ...(fixed.resources ? { resources: fixed.resources } : {}),
    shared: fixed.shared,
    ...(fixed.transfers ? { transfers: [...fixed.transfers] } : {}),
    ...(fixed.containers ? { containers: fixed.containers } : {}),
    ...(fixed.containersUnavailable ? { containersUnavailable: fixed.containersUnavailable } : {}),
  };
}

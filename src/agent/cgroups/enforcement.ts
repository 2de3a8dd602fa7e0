// Whether this agent enforces its attempts' limits, and where: at start it finds its own cgroups
// (cgroup-layout.ts) and makes a base for its attempts under them, named after the agent and its
// work folder (two agents on one host never share one). One line at start says which, or why not.
// What an attempt's cgroup does is in attempt-cgroup.ts.

import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, rmdirSync, writeFileSync } from "node:fs";
import { AttemptCgroup } from "./attempt-cgroup.ts";
import { baseUnder, type CgroupBase } from "./cgroup-base.ts";
import {
  type CgroupLayout,
  cgroupLayout,
  cgroupMounts,
  directoryOf,
  ownCgroups,
  REQUIRED_CONTROLLERS,
} from "./cgroup-layout.ts";
import { SpareCgroups } from "./spare-cgroups.ts";

export interface Enforcement {
  /** Where attempts' cgroups are made: v1's devices hierarchy only on a host with GPUs to keep apart. */
  base: CgroupBase;
  /** Every hierarchy the layout has: where an earlier run's attempts (with GPUs or not) may have been. */
  fullBase: CgroupBase;
  /** The one line the agent logs at start. */
  description: string;
  /** The cgroup `name` of an attempt (an adopted one's, as its start.json names it). */
  attempt(name: string): AttemptCgroup;
  /** A cgroup for a new attempt: a kept one (under its own name), or a new one named `folderName`. */
  newAttempt(folderName: string): AttemptCgroup;
  /** Emptied cgroups kept for the next attempts (v1 without devices only), or null. */
  spares: SpareCgroups | null;
}

export type EnforcementChoice = { enforcement: Enforcement } | { unavailable: string };

function read(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

/** The base's name: the agent's name (letters, digits, `.`, `_`, `-`) and a short hash of its work folder. */
export function baseName(agentName: string, workDir: string): string {
  const hash = createHash("sha256").update(workDir).digest("hex").slice(0, 8);
  return `steward-${agentName.replace(/[^A-Za-z0-9._-]/g, "_").slice(0, 64)}-${hash}`;
}

/** This process's cgroup layout, from /proc. */
export function readLayout(): { layout: CgroupLayout } | { unavailable: string } {
  const mountinfo = read("/proc/self/mountinfo");
  const self = read("/proc/self/cgroup");
  if (mountinfo === null || self === null)
    return { unavailable: "no /proc/self/mountinfo or /proc/self/cgroup" };
  // v2's offer is read from the agent's own unified cgroup's cgroup.controllers.
  const unified = cgroupMounts(mountinfo).find((mount) => mount.version === 2);
  const path = ownCgroups(self).get("");
  const dir = unified && path !== undefined ? directoryOf(unified, path) : null;
  return cgroupLayout(mountinfo, self, dir === null ? null : read(`${dir}/cgroup.controllers`));
}

/**
 * Makes the agent's base for attempts. In v2 the agent's own cgroup must hold no process once its
 * controllers are handed down (the kernel's rule for a cgroup with children that use them): the
 * agent's processes move into a leaf `agent` beside the base first. In v1 each hierarchy is a
 * directory to make, join and remove for every attempt: only those an attempt needs are used
 * (attemptsBase), devices only when `gpus` (the host declares GPUs that attempts must be kept from).
 */
export function openEnforcement(
  agentName: string,
  workDir: string,
  layout: CgroupLayout,
  gpus = false,
): EnforcementChoice {
  const name = baseName(agentName, workDir);
  const fullBase = baseUnder(layout, name);
  const base = attemptsBase(fullBase, gpus);
  try {
    if (base.version === 2 && layout.version === 2) {
      const own = layout.dir;
      const controllers = REQUIRED_CONTROLLERS.map((controller) => `+${controller}`).join(" ");
      const procs = (read(`${own}/cgroup.procs`) ?? "").split("\n").filter(Boolean);
      if (procs.length > 0 && read(`${own}/cgroup.type`) !== null) {
        mkdirSync(`${own}/agent`, { recursive: true });
        for (const pid of procs) {
          try {
            writeFileSync(`${own}/agent/cgroup.procs`, pid);
          } catch {}
        }
      }
      writeFileSync(`${own}/cgroup.subtree_control`, controllers);
      mkdirSync(base.dir, { recursive: true });
      writeFileSync(`${base.dir}/cgroup.subtree_control`, controllers);
    } else if (base.version === 1) {
      for (const dir of new Set(Object.values(base.dirs))) mkdirSync(dir, { recursive: true });
    }
  } catch (error) {
    const where = base.version === 2 ? base.dir : base.dirs.memory;
    return {
      unavailable: `cannot make cgroups under ${where.replace(/\/[^/]+$/, "")} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message}): run the agent as root, or in a cgroup delegated to it (systemd Delegate=yes)`,
    };
  }
  const where = base.version === 2 ? base.dir : base.dirs.memory.replace(/^\/sys\/fs\/cgroup\/memory/, "");
  const controllers = base.version === 2 ? "memory, cpu, pids" : Object.keys(base.dirs).join(", ");
  // Kept for reuse in v1 only (v2 has no rename of a cgroup, nor a reset of its CPU time), and not
  // with devices to keep apart (a device list only grows).
  const spares = base.version === 1 && base.dirs.devices === undefined ? new SpareCgroups(base) : null;
  return {
    enforcement: {
      base,
      fullBase,
      description: `enforcing memory, CPU and process limits with cgroup v${base.version} (${controllers}) under ${where}`,
      attempt: (name) => {
        spares?.named(name);
        return new AttemptCgroup(base, name, spares);
      },
      newAttempt: (folderName) => {
        if (!spares) return new AttemptCgroup(base, folderName);
        const kept = spares.take();
        const name = kept?.name ?? spares.freeName(folderName);
        spares.named(name);
        return new AttemptCgroup(base, name, spares, kept);
      },
      spares,
    },
  };
}

/**
 * Removes the attempts' cgroups that are not in `live` (an earlier run's, whose attempt has ended),
 * killing what is left in them first. Every hierarchy is looked in: an earlier run may have used
 * one this run does not (devices, freezer), and left a directory there when its attempt was
 * adopted and ended by this run.
 */
export async function sweepCgroups(enforcement: Enforcement, live: ReadonlySet<string>): Promise<number> {
  const base = enforcement.fullBase;
  const names = new Set<string>();
  for (const listing of base.version === 2 ? [base.dir] : new Set(Object.values(base.dirs))) {
    try {
      for (const entry of readdirSync(listing, { withFileTypes: true }))
        if (entry.isDirectory()) names.add(entry.name);
    } catch {}
  }
  let removed = 0;
  for (const name of names) {
    if (live.has(name)) continue;
    await new AttemptCgroup(enforcement.fullBase, name).remove();
    removed++;
  }
  return removed;
}

/** Removes the agent's base (when empty): an agent that stops leaves nothing behind. */
export function removeBase(enforcement: Enforcement): void {
  enforcement.spares?.removeAll();
  const base = enforcement.fullBase;
  const dirs = base.version === 2 ? [base.dir] : [...new Set(Object.values(base.dirs))];
  for (const dir of dirs) {
    try {
      rmdirSync(dir);
    } catch {}
  }
}

/**
 * The v1 hierarchies an attempt's cgroup is made in: not the freezer (the end of an attempt stops
 * forks with its process limit instead, attempt-cgroup.ts), and devices only with GPUs to keep apart.
 */
function attemptsBase(base: CgroupBase, gpus: boolean): CgroupBase {
  if (base.version === 2) return base;
  const { devices, freezer: _, ...dirs } = base.dirs;
  return { version: 1, dirs: gpus && devices !== undefined ? { ...dirs, devices } : dirs };
}

/** The agent's enforcement, and the one line it says about it at start (a warning when there is none). */
export function chooseEnforcement(
  enforce: boolean,
  agentName: string,
  workDir: string,
  gpus: boolean,
): { enforcement: Enforcement | null; notice: { warn: boolean; message: string } } {
  if (!enforce)
    return {
      enforcement: null,
      notice: { warn: true, message: "not enforcing resource limits: --no-enforce" },
    };
  const found = readLayout();
  const chosen = "layout" in found ? openEnforcement(agentName, workDir, found.layout, gpus) : found;
  if ("unavailable" in chosen)
    return {
      enforcement: null,
      notice: { warn: true, message: `not enforcing resource limits: ${chosen.unavailable}` },
    };
  return {
    enforcement: chosen.enforcement,
    notice: { warn: false, message: chosen.enforcement.description },
  };
}

/** Whether attempts are kept from the GPUs not given to them: v1's devices controller does it; v2 would need a BPF device program. */
export function isolatesGpus(enforcement: Enforcement | null): boolean {
  const base = enforcement?.base;
  return base !== undefined && base.version === 1 && base.dirs.devices !== undefined;
}

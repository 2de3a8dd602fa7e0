// Emptied attempt cgroups kept for the next attempts (cgroup v1, on a host without GPUs to keep
// apart). Making a cgroup in each hierarchy and removing it again (mkdir, rmdir: the kernel sets up
// and tears down every controller's state) cost the agent about 0.1 to 0.2 ms of CPU a task, a
// tenth of a short task's whole cost. A kept cgroup keeps its name: the attempt that takes it
// records the name in its start.json (attempt.ts), which is how a restarted agent finds it; no
// directory is renamed (two renames in each of four hierarchies an attempt were 224 ms of 3.9 s
// of the agent's main thread in a CPU profile of 2,000 short tasks). A cgroup is kept only when nothing of its attempt can reach the next
// one: no process left in it, no out-of-memory kill counted (that count cannot be reset, and the
// next attempt's end reads it), and less than SPARE_CGROUP_MAX_CHARGED_BYTES still charged to it
// (the page cache of files its job wrote: the next attempt's peak memory counts from there). Its
// peak memory and CPU time are reset when it is kept; its limits stay, remembered, and the next
// attempt writes only those of its own that differ (attempt-cgroup.ts, settingsToWrite).
// A restarted agent removes the kept ones with the other cgroups no live attempt has
// (enforcement.ts, sweepCgroups), and an agent that stops removes them first.

import { rmdirSync } from "node:fs";
import { type CgroupBase, cgroupDirFor, cgroupDirs } from "./cgroup-base.ts";
import { cgroupFiles } from "./cgroup-files.ts";
import type { WrittenSettings } from "./cgroup-limits.ts";

/** How many emptied cgroups the agent keeps at most. */
export const SPARE_CGROUPS_MAX = 64;

/** A cgroup still charged with this much memory (or more) once its attempt has ended is removed, not kept. */
export const SPARE_CGROUP_MAX_CHARGED_BYTES = 1024 * 1024;

/** What a kept cgroup must show: nothing left in it, no out-of-memory kill, little memory charged. */
export interface CgroupRemains {
  processes: number;
  oomKills: number;
  /** Bytes still charged to its memory cgroup (null: unknown). */
  chargedBytes: number | null;
}

/** Whether an ended attempt's cgroup may be kept for another attempt. */
export function mayKeepCgroup(
  remains: CgroupRemains,
  maxChargedBytes = SPARE_CGROUP_MAX_CHARGED_BYTES,
): boolean {
  return (
    remains.processes === 0 &&
    remains.oomKills === 0 &&
    remains.chargedBytes !== null &&
    remains.chargedBytes < maxChargedBytes
  );
}

type V1Base = Extract<CgroupBase, { version: 1 }>;

/** A kept cgroup: its name, and what its files were last set to. */
export interface KeptCgroup {
  name: string;
  settings: WrittenSettings;
}

export class SpareCgroups {
  readonly #base: V1Base;
  readonly #max: number;
  /** Kept cgroups, each with what its files were last set to. */
  readonly #spares: KeptCgroup[] = [];
  /**
   * The names of the cgroups that are there, in use or kept: a kept cgroup goes on under the name
   * of the attempt that made it, and a new attempt's cgroup must not take a name still held.
   */
  readonly #names = new Set<string>();

  constructor(base: V1Base, max = SPARE_CGROUPS_MAX) {
    this.#base = base;
    this.#max = max;
  }

  get size(): number {
    return this.#spares.length;
  }

  /** The directories of the cgroup `name`, each hierarchy once (they may be mounted together). */
  dirsOf(name: string): string[] {
    return cgroupDirs(this.#base, name);
  }

  /** A name for a new cgroup: `wanted` (an attempt folder's name), or that name with a suffix while a cgroup holds it. */
  freeName(wanted: string): string {
    let name = wanted;
    for (let n = 1; this.#names.has(name); n++) name = `${wanted}~${n}`;
    return name;
  }

  /** Says the cgroup `name` is there (made, or adopted after a restart). */
  named(name: string): void {
    this.#names.add(name);
  }

  /** Says the cgroup `name` was removed. */
  removed(name: string): void {
    this.#names.delete(name);
  }

  /** Takes a kept cgroup for an attempt (the last kept: the likeliest still in the caches), or null when none is kept. */
  take(): KeptCgroup | null {
    return this.#spares.pop() ?? null;
  }

  /**
   * Keeps the emptied cgroup `name` of an ended attempt, its peak memory and CPU time reset and
   * its limits as `settings` say they are; false when it is not to be kept (full, or its remains
   * say no: mayKeepCgroup), and the caller removes it.
   */
  keep(name: string, remains: CgroupRemains, settings: WrittenSettings): boolean {
    if (this.#spares.length >= this.#max || !mayKeepCgroup(remains)) return false;
    const memory = cgroupDirFor(this.#base, name, "memory");
    const cpuacct = cgroupDirFor(this.#base, name, "cpuacct");
    try {
      // The next attempt's peak counts from its start (writing 0 resets it), and its CPU time.
      if (memory !== null) cgroupFiles.write(`${memory}/memory.max_usage_in_bytes`, "0");
      if (cpuacct !== null) cgroupFiles.write(`${cpuacct}/cpuacct.usage`, "0");
    } catch {
      return false;
    }
    this.#spares.push({ name, settings });
    return true;
  }

  /** Removes every kept cgroup (an agent that stops leaves nothing behind). */
  removeAll(): void {
    for (const spare of this.#spares.splice(0)) {
      cgroupFiles.closeUnder(this.dirsOf(spare.name));
      removeAll(this.dirsOf(spare.name));
      this.#names.delete(spare.name);
    }
  }
}

function removeAll(dirs: readonly string[]): void {
  for (const dir of dirs) {
    try {
      rmdirSync(dir);
    } catch {}
  }
}

// Emptied attempt cgroups kept for the next attempts (cgroup v1, on a host without GPUs to keep
// apart). Making a cgroup in each hierarchy and removing it again (mkdir, rmdir: the kernel sets up
// and tears down every controller's state) cost the agent about 0.1 to 0.2 ms of CPU a task, a
// tenth of a short task's whole cost; renaming a kept one to the next attempt's name costs a fifth
// of that. A cgroup is kept only when nothing of its attempt can reach the next one: no process
// left in it, no out-of-memory kill counted (that count cannot be reset, and the next attempt's
// end reads it), and less than SPARE_CGROUP_MAX_CHARGED_BYTES still charged to it (the page cache
// of files its job wrote: the next attempt's peak memory counts from there). Its peak memory and
// CPU time are reset when it is kept; its limits stay, remembered, and the next attempt writes only
// those of its own that differ (attempt-cgroup.ts, settingsToWrite).
// Kept ones are named `spare-N`: a restarted agent removes them with the other cgroups no live
// attempt has (enforcement.ts, sweepCgroups), and an agent that stops removes them first.

import { renameSync, rmdirSync, writeFileSync } from "node:fs";
import { type CgroupBase, cgroupDirFor, cgroupDirs } from "./attempt-cgroup.ts";
import type { WrittenSettings } from "./cgroup-limits.ts";

/** How many emptied cgroups the agent keeps at most. */
export const SPARE_CGROUPS_MAX = 64;

/** A cgroup still charged with this much memory (or more) once its attempt has ended is removed, not kept. */
export const SPARE_CGROUP_MAX_CHARGED_BYTES = 1024 * 1024;

/** The prefix of a kept cgroup's name. */
export const SPARE_CGROUP_PREFIX = "spare-";

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

export class SpareCgroups {
  readonly #base: V1Base;
  readonly #max: number;
  /** Kept cgroups, each with what its files were last set to. */
  readonly #spares: { name: string; settings: WrittenSettings }[] = [];
  #named = 0;

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

  /**
   * Gives a kept cgroup the name `name` (its directories renamed in every hierarchy) and answers
   * what its files were last set to, or null when there was none to give and the attempt must
   * make its own.
   */
  takeAs(name: string): WrittenSettings | null {
    for (;;) {
      const spare = this.#spares.pop();
      if (spare === undefined) return null;
      if (renameAll(this.dirsOf(spare.name), this.dirsOf(name))) return spare.settings;
      // Removed by hand meanwhile, or half renamed: not used.
      removeAll(this.dirsOf(spare.name));
    }
  }

  /**
   * Keeps the emptied cgroup `name` of an ended attempt, its peak memory and CPU time reset and
   * its limits as `settings` say they are, under a spare name; false when it is not to be kept
   * (full, or its remains say no: mayKeepCgroup), and the caller removes it.
   */
  keep(name: string, remains: CgroupRemains, settings: WrittenSettings): boolean {
    if (this.#spares.length >= this.#max || !mayKeepCgroup(remains)) return false;
    const memory = cgroupDirFor(this.#base, name, "memory");
    const cpuacct = cgroupDirFor(this.#base, name, "cpuacct");
    try {
      // The next attempt's peak counts from its start (writing 0 resets it), and its CPU time.
      if (memory !== null) writeFileSync(`${memory}/memory.max_usage_in_bytes`, "0");
      if (cpuacct !== null) writeFileSync(`${cpuacct}/cpuacct.usage`, "0");
    } catch {
      return false;
    }
    const spare = `${SPARE_CGROUP_PREFIX}${this.#named++}`;
    if (!renameAll(this.dirsOf(name), this.dirsOf(spare))) return false;
    this.#spares.push({ name: spare, settings });
    return true;
  }

  /** Removes every kept cgroup (an agent that stops leaves nothing behind). */
  removeAll(): void {
    for (const spare of this.#spares.splice(0)) removeAll(this.dirsOf(spare.name));
  }
}

/** Renames each directory to its counterpart; on a failure, renames back what was done and answers false. */
function renameAll(from: readonly string[], to: readonly string[]): boolean {
  for (let i = 0; i < from.length; i++) {
    try {
      renameSync(from[i], to[i]);
    } catch {
      for (let j = i - 1; j >= 0; j--) {
        try {
          renameSync(to[j], from[j]);
        } catch {}
      }
      return false;
    }
  }
  return true;
}

function removeAll(dirs: readonly string[]): void {
  for (const dir of dirs) {
    try {
      rmdirSync(dir);
    } catch {}
  }
}

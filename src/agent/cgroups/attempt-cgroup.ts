// One attempt's cgroup: made with its limits before the job starts, joined by the job's shell
// before it execs the command (job.sh), so that every process the job makes, even one that leaves
// its session, is in it; read for out-of-memory kills and usage when the job ends; then every
// process left in it is killed and it is removed. In cgroup v1 it is one directory in each
// hierarchy the agent uses; in v2, one directory.

import { existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmdirSync } from "node:fs";
import { dirname } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { monotonicMs } from "../../common/time/clocks.ts";
import { shellQuote } from "../attempt/job-script.ts";
import { type CgroupBase, cgroupDirFor, cgroupDirs } from "./cgroup-base.ts";
import { cgroupFiles } from "./cgroup-files.ts";
import type { V1Controller } from "./cgroup-layout.ts";
import {
  type AttemptLimits,
  type CpuTime,
  cgroupSettings,
  cpuTimeFromCpuacct,
  cpuTimeFromCpuStat,
  oomKillCount,
  settingsToWrite,
  type WrittenSettings,
  writtenSettings,
} from "./cgroup-limits.ts";
import type { KeptCgroup, SpareCgroups } from "./spare-cgroups.ts";

/** How long the end of an attempt waits for its last processes to go before it leaves the cgroup be. */
export const CGROUP_EMPTY_TIMEOUT_MS = 5_000;

/** What an attempt used, read from its cgroup. */
export interface CgroupUsage {
  cpu: CpuTime | null;
  /** The most memory it held at once, in bytes (null where the kernel does not keep it). */
  peakMemoryBytes: number | null;
}

/**
 * Whether the kernel accounts swap in the memory hierarchy of the cgroup directory `memory` (v1's
 * memory.memsw files: the kernel's swapaccount setting, the same for every cgroup of a
 * hierarchy, so looked at once for each).
 */
const swapAccounting = new Map<string, boolean>();
function swapAccountedIn(memory: string): boolean {
  const hierarchy = dirname(memory);
  let accounted = swapAccounting.get(hierarchy);
  if (accounted === undefined) {
    accounted = existsSync(`${memory}/memory.memsw.limit_in_bytes`);
    swapAccounting.set(hierarchy, accounted);
  }
  return accounted;
}

/** The cgroups right under a cgroup directory (none when it cannot be read). */
function subfolders(dir: string): string[] {
  try {
    return readdirSync(dir, { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => `${dir}/${entry.name}`);
  } catch {
    return [];
  }
}

function readQuietly(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

export class AttemptCgroup {
  readonly base: CgroupBase;
  /** Its name: the attempt folder's, or a kept cgroup's (recorded in the attempt's start.json). */
  readonly name: string;
  /** Emptied cgroups kept for reuse (spare-cgroups.ts): given back at remove. */
  readonly #spares: SpareCgroups | null;
  /** The kept cgroup it is (its directories there already, its files as they say), until create. */
  #kept: KeptCgroup | null;
  /** What its files are set to, once made. */
  #settings: WrittenSettings = new Map();
  /** Its end, once measured: emptied (nothing can join it again), with this many out-of-memory kills. */
  #emptied: { oomKills: number } | null = null;

  /** The cgroup `name`; `kept`: a kept cgroup of that name taken for a new attempt (SpareCgroups.take). */
  constructor(
    base: CgroupBase,
    name: string,
    spares: SpareCgroups | null = null,
    kept: KeptCgroup | null = null,
  ) {
    this.base = base;
    this.name = name;
    this.#spares = spares;
    this.#kept = kept;
    if (kept) this.#settings = kept.settings;
  }

  /** The attempt's directory for a controller (v2: the one directory). */
  dirFor(controller: V1Controller): string | null {
    return cgroupDirFor(this.base, this.name, controller);
  }

  /** Every directory of the attempt, each once (v1 hierarchies may be mounted together). */
  get dirs(): string[] {
    return cgroupDirs(this.base, this.name);
  }

  /**
   * Makes the directories (or takes a kept cgroup) and writes the limits (on a kept one, those that
   * differ from what it holds); throws naming the file it could not write.
   */
  create(limits: AttemptLimits): void {
    // A kept cgroup whose directories are all there (nobody removed one by hand meanwhile), or new ones.
    const kept = this.#kept !== null && this.dirs.every(isDirectory) ? this.#kept.settings : null;
    this.#kept = null;
    if (kept === null) for (const dir of this.dirs) mkdirSync(dir, { recursive: true });
    const memory = this.dirFor("memory");
    const swapAccounted = this.base.version === 1 && memory !== null && swapAccountedIn(memory);
    const wanted = cgroupSettings(this.base.version, limits, swapAccounted);
    this.#settings = writtenSettings(wanted);
    for (const setting of kept === null ? wanted : settingsToWrite(kept, wanted)) {
      const dir = this.dirFor(setting.controller);
      // Devices are limited where the devices hierarchy is mounted (v1), not otherwise.
      if (dir === null) continue;
      const path = `${dir}/${setting.file}`;
      try {
        cgroupFiles.write(path, setting.value);
      } catch (error) {
        throw new Error(`cannot set ${path} to ${setting.value}: ${(error as Error).message}`);
      }
    }
  }

  /** The files a process writes `0` to, to move itself into the attempt's cgroup (one a hierarchy). */
  procsFiles(): string[] {
    return this.dirs.map((dir) => `${dir}/cgroup.procs`);
  }

  /** Shell lines that move the shell running them into the attempt's cgroup (`echo 0` moves the writer). */
  joinScript(): string {
    return this.procsFiles()
      .map((file) => `echo 0 > ${shellQuote(file)} || exit 125\n`)
      .join("");
  }

  /**
   * How many processes the kernel killed for the memory limit, in the cgroup and the cgroups under
   * it (a container's, which its runtime makes there: containers/bundle-config.ts). v2's
   * memory.events counts those of the cgroups under it already; v1's oom_control does not.
   */
  oomKills(): number {
    const memory = this.dirFor("memory");
    if (memory === null) return 0;
    if (this.base.version === 2) {
      const text = cgroupFiles.read(`${memory}/memory.events`);
      return text === null ? 0 : oomKillCount(text);
    }
    const own = cgroupFiles.read(`${memory}/memory.oom_control`);
    let kills = own === null ? 0 : oomKillCount(own);
    // Read once, not kept open: a container's cgroup goes with the container.
    for (const dir of subfolders(memory)) {
      const text = readQuietly(`${dir}/memory.oom_control`);
      kills += text === null ? 0 : oomKillCount(text);
    }
    return kills;
  }

  usage(): CgroupUsage {
    let cpu: CpuTime | null = null;
    let peakMemoryBytes: number | null = null;
    if (this.base.version === 2) {
      const dir = this.dirs[0];
      const stat = cgroupFiles.read(`${dir}/cpu.stat`);
      cpu = stat === null ? null : cpuTimeFromCpuStat(stat);
      const peak = cgroupFiles.read(`${dir}/memory.peak`);
      peakMemoryBytes = peak === null ? null : Number(peak.trim());
    } else {
      const cpuacct = this.dirFor("cpuacct");
      if (cpuacct !== null) {
        const user = cgroupFiles.read(`${cpuacct}/cpuacct.usage_user`);
        const system = cgroupFiles.read(`${cpuacct}/cpuacct.usage_sys`);
        cpu = user === null || system === null ? null : cpuTimeFromCpuacct(user, system);
      }
      const memory = this.dirFor("memory");
      const peak = memory === null ? null : cgroupFiles.read(`${memory}/memory.max_usage_in_bytes`);
      peakMemoryBytes = peak === null ? null : Number(peak.trim());
    }
    if (peakMemoryBytes !== null && !Number.isFinite(peakMemoryBytes)) peakMemoryBytes = null;
    return { cpu, peakMemoryBytes };
  }

  /** The bytes still charged to its memory cgroup (v1), or null when they cannot be read. */
  chargedBytes(): number | null {
    const memory = this.base.version === 1 ? this.dirFor("memory") : null;
    const text = memory === null ? null : cgroupFiles.read(`${memory}/memory.usage_in_bytes`);
    const bytes = text === null ? Number.NaN : Number(text.trim());
    return Number.isFinite(bytes) ? bytes : null;
  }

  /**
   * Says the attempt's end was measured with the cgroup seen empty (killAll answered true) and
   * `oomKills` counted: its removal need not look again.
   */
  endMeasured(oomKills: number): void {
    this.#emptied = { oomKills };
  }

  /** Whether it was seen empty at the attempt's measured end: nothing of the job can hold anything of it. */
  get emptied(): boolean {
    return this.#emptied !== null;
  }

  /** The processes in the attempt's cgroup now. */
  processes(): number[] {
    const dir = this.dirFor("pids") ?? this.dirs[0];
    const text = cgroupFiles.read(`${dir}/cgroup.procs`);
    if (text === null) return [];
    return text
      .split("\n")
      .filter(Boolean)
      .map(Number)
      .filter((pid) => pid > 0);
  }

  /**
   * Kills every process in the cgroup and waits until none is left (at most `timeoutMs`); true
   * when it is empty. Nothing may fork meanwhile: v2 writes cgroup.kill (or freezes the cgroup
   * where the kernel has no cgroup.kill); v1 sets the process limit to 0 (pids.max: every fork
   * then fails), and also freezes where its cgroup has a freezer directory (an earlier version's),
   * sends SIGKILL to each, and thaws it for them to die. What a fork begun before the limit made
   * is killed in a later round.
   */
  async killAll(timeoutMs = CGROUP_EMPTY_TIMEOUT_MS): Promise<boolean> {
    const deadline = monotonicMs() + timeoutMs;
    const kill = this.base.version === 2 ? `${this.dirs[0]}/cgroup.kill` : null;
    for (let round = 0; ; round++) {
      const left = this.processes();
      if (left.length === 0) return true;
      if (monotonicMs() > deadline) return false;
      if (kill && existsSync(kill)) {
        if (round === 0) writeQuietly(kill, "1");
      } else if (round % 10 === 0) {
        await this.killOneByOne();
      }
      await sleep(Math.min(50, 5 * (round + 1)));
    }
  }

  private async killOneByOne(): Promise<void> {
    const freezer = this.base.version === 1 ? this.dirFor("freezer") : `${this.dirs[0]}`;
    const freezeFile =
      freezer === null
        ? null
        : this.base.version === 1
          ? `${freezer}/freezer.state`
          : `${freezer}/cgroup.freeze`;
    const [frozen, thawed] = this.base.version === 1 ? ["FROZEN", "THAWED"] : ["1", "0"];
    const pids = this.base.version === 1 ? this.dirFor("pids") : null;
    if (pids) {
      writeQuietly(`${pids}/pids.max`, "0");
      // Kept, the cgroup holds this now: the next attempt writes its own limit over it.
      this.#settings = new Map([...this.#settings, ["pids/pids.max", "0"]]);
    }
    if (freezeFile) writeQuietly(freezeFile, frozen);
    for (const pid of this.processes()) {
      try {
        process.kill(pid, "SIGKILL");
      } catch {}
    }
    if (freezeFile) writeQuietly(freezeFile, thawed);
  }

  /**
   * Kills what is left and removes the directories, or keeps them for another attempt when they
   * may be (spare-cgroups.ts); false when a process outlived the wait.
   */
  async remove(): Promise<boolean> {
    // Emptied when its end was measured (endMeasured): no process can join it since.
    const empty = this.#emptied !== null || (await this.killAll());
    if (
      empty &&
      this.#spares?.keep(
        this.name,
        {
          processes: 0,
          oomKills: this.#emptied?.oomKills ?? this.oomKills(),
          chargedBytes: this.chargedBytes(),
        },
        this.#settings,
      )
    )
      return true;
    let gone = true;
    cgroupFiles.closeUnder(this.dirs);
    for (const dir of this.dirs) {
      for (let tries = 0; ; tries++) {
        try {
          rmdirSync(dir);
          break;
        } catch (error) {
          const code = (error as NodeJS.ErrnoException).code;
          if (code === "ENOENT") break;
          if (tries === 19) {
            gone = false;
            break;
          }
          // EBUSY: the last process is still being torn down.
          await sleep(25);
        }
      }
    }
    // A directory left (a process outlived the wait) keeps its name from new attempts.
    if (gone) this.#spares?.removed(this.name);
    return empty;
  }
}

function isDirectory(path: string): boolean {
  return lstatSync(path, { throwIfNoEntry: false })?.isDirectory() === true;
}

function writeQuietly(path: string, value: string): void {
  try {
    cgroupFiles.write(path, value);
  } catch {}
}

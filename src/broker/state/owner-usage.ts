// What each owner uses, for fair share: cpus running now, and cpu-seconds of ended attempts kept
// decayed (scheduler/fair-share.ts; measured CPU time where there is one, see attemptCpuSeconds). Kept in memory and rebuilt from the attempts at recovery.

import { decayedUsage, type OwnerShare } from "../scheduler/fair-share.ts";

interface Usage {
  runningCpus: number;
  /** Decayed cpu-seconds as of `at`. */
  cpuSeconds: number;
  at: number;
}

export class OwnerUsage {
  readonly #owners = new Map<string, Usage>();

  #usage(owner: string): Usage {
    let usage = this.#owners.get(owner);
    if (!usage) {
      usage = { runningCpus: 0, cpuSeconds: 0, at: 0 };
      this.#owners.set(owner, usage);
    }
    return usage;
  }

  started(owner: string, cpus: number): void {
    this.#usage(owner).runningCpus += cpus;
  }

  /** An attempt stopped running: its cpus free up, the time it ran counts as recent use. */
  stopped(owner: string, cpus: number): void {
    const usage = this.#usage(owner);
    usage.runningCpus = Math.max(0, usage.runningCpus - cpus);
  }

  /** Adds the cpu-seconds of an attempt that ended at `endedAt` (ms): see attemptCpuSeconds. */
  used(owner: string, seconds: number, endedAt: number): void {
    const usage = this.#usage(owner);
    if (endedAt >= usage.at) {
      usage.cpuSeconds = decayedUsage(usage.cpuSeconds, usage.at, endedAt) + seconds;
      usage.at = endedAt;
    } else {
      usage.cpuSeconds += decayedUsage(seconds, endedAt, usage.at);
    }
  }

  share(owner: string, now: number): OwnerShare {
    const usage = this.#owners.get(owner);
    if (!usage) return { runningCpus: 0, recentCpuSeconds: 0 };
    return {
      runningCpus: usage.runningCpus,
      recentCpuSeconds: decayedUsage(usage.cpuSeconds, usage.at, now),
    };
  }

  /** Every owner's standing at `now`. */
  shares(now: number): Map<string, OwnerShare> {
    const shares = new Map<string, OwnerShare>();
    for (const owner of this.#owners.keys()) shares.set(owner, this.share(owner, now));
    return shares;
  }
}

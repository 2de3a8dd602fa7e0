// What each owner uses, for fair share: the attempts running now (cpus and start), and the
// cpu-seconds of ended attempts kept decayed (scheduler/fair-share.ts; measured CPU time where
// there is one, see attemptCpuSeconds). Each owner's factor comes from the shares tree over these
// (scheduler/fair-share-tree.ts). Kept in memory and rebuilt from the attempts at recovery: the
// ended ones through used(), the live ones through started() with their start time.

import type { ShareTree } from "../../common/model/shares-file.ts";
import { FLAT_SHARE_TREE } from "../../common/model/shares-file.ts";
import { decayedUsage, FAIR_SHARE_HALF_LIFE_SECONDS, type OwnerShare } from "../scheduler/fair-share.ts";
import { factorsOf, type ShareNode, shareTreeOf } from "../scheduler/fair-share-tree.ts";

/** How fair share is set up: the server's `--shares` and `--fair-share-half-life`. */
export interface FairShareSettings {
  tree: ShareTree;
  halfLifeSeconds: number;
  /** The group a user belongs to (their token's), where a user the tree does not name goes when it is an account. */
  groupOf?: (user: string) => string | undefined;
}

export const DEFAULT_FAIR_SHARE: FairShareSettings = {
  tree: FLAT_SHARE_TREE,
  halfLifeSeconds: FAIR_SHARE_HALF_LIFE_SECONDS,
};

interface Usage {
  runningCpus: number;
  /** Decayed cpu-seconds of ended attempts as of `at`. */
  cpuSeconds: number;
  at: number;
  /** Live attempts by their key, with what they hold and since when (their usage accrues). */
  running: Map<string, { cpus: number; startedAt: number }>;
  /**
   * The running attempts' accrual in two sums, so that a pass does not visit every live attempt:
   * C = the sum of their cpus, W = the sum of cpus * 2^((startedAt - ref)/h). What they accrued by
   * `now` is then h/ln 2 * (C - 2^(-(now - ref)/h) * W) (fair-share-tree.ts runningUsage, summed).
   */
  accrualCpus: number;
  weight: number;
  ref: number;
}

/** An owner's decayed cpu-seconds of ended attempts as of `at` (OwnerUsage.usedMark). */
export interface UsedMark {
  cpuSeconds: number;
  at: number;
}

/** W is rebased on a newer reference before 2^(...) nears the largest double (2^1024). */
const MAX_WEIGHT_EXPONENT = 500;

export class OwnerUsage {
  readonly #owners = new Map<string, Usage>();
  readonly settings: FairShareSettings;

  constructor(settings: Partial<FairShareSettings> = {}) {
    this.settings = { ...DEFAULT_FAIR_SHARE, ...settings };
  }

  #usage(owner: string): Usage {
    let usage = this.#owners.get(owner);
    if (!usage) {
      usage = { runningCpus: 0, cpuSeconds: 0, at: 0, running: new Map(), accrualCpus: 0, weight: 0, ref: 0 };
      this.#owners.set(owner, usage);
    }
    return usage;
  }

  /**
   * An attempt started (or was recovered live): its cpus count as running, and with its key and
   * start time its usage accrues until it stops.
   */
  started(owner: string, cpus: number, key?: string, startedAt?: number): void {
    const usage = this.#usage(owner);
    usage.runningCpus += cpus;
    if (key === undefined || startedAt === undefined || usage.running.has(key)) return;
    if (usage.running.size === 0) {
      usage.ref = startedAt;
      usage.weight = 0;
      usage.accrualCpus = 0;
    }
    usage.running.set(key, { cpus, startedAt });
    usage.accrualCpus += cpus;
    const exponent = (startedAt - usage.ref) / 1000 / this.settings.halfLifeSeconds;
    if (exponent > MAX_WEIGHT_EXPONENT) this.#rebase(usage, startedAt);
    else usage.weight += cpus * 2 ** exponent;
  }

  /** An attempt stopped running: its cpus free up and its accrual ends (used() then charges it). */
  stopped(owner: string, cpus: number, key?: string): void {
    const usage = this.#usage(owner);
    usage.runningCpus = Math.max(0, usage.runningCpus - cpus);
    const attempt = key === undefined ? undefined : usage.running.get(key);
    if (key === undefined || attempt === undefined) return;
    usage.running.delete(key);
    if (usage.running.size === 0) {
      usage.weight = 0;
      usage.accrualCpus = 0;
      return;
    }
    usage.accrualCpus -= attempt.cpus;
    usage.weight -=
      attempt.cpus * 2 ** ((attempt.startedAt - usage.ref) / 1000 / this.settings.halfLifeSeconds);
  }

  /** W again from the running attempts, against a new reference time. */
  #rebase(usage: Usage, ref: number): void {
    usage.ref = ref;
    usage.weight = 0;
    for (const attempt of usage.running.values())
      usage.weight += attempt.cpus * 2 ** ((attempt.startedAt - ref) / 1000 / this.settings.halfLifeSeconds);
  }

  /** A user's usage at `now`: ended attempts decayed, plus what the running ones accrued (usageAt, from the sums). */
  #usageOf(usage: Usage, now: number): number {
    const h = this.settings.halfLifeSeconds;
    const ended = decayedUsage(usage.cpuSeconds, usage.at, now, h);
    if (usage.running.size === 0) return ended;
    const accrued =
      (h / Math.LN2) * (usage.accrualCpus - 2 ** (-(now - usage.ref) / 1000 / h) * usage.weight);
    return ended + Math.max(0, accrued);
  }

  /** Adds the cpu-seconds of an attempt that ended at `endedAt` (ms): see attemptCpuSeconds. */
  used(owner: string, seconds: number, endedAt: number): void {
    const usage = this.#usage(owner);
    const halfLife = this.settings.halfLifeSeconds;
    if (endedAt >= usage.at) {
      usage.cpuSeconds = decayedUsage(usage.cpuSeconds, usage.at, endedAt, halfLife) + seconds;
      usage.at = endedAt;
    } else {
      usage.cpuSeconds += decayedUsage(seconds, endedAt, usage.at, halfLife);
    }
  }

  /** What an owner's ended attempts add up to now, to be put back with restoreUsed. */
  usedMark(owner: string): UsedMark | undefined {
    const usage = this.#owners.get(owner);
    return usage && { cpuSeconds: usage.cpuSeconds, at: usage.at };
  }

  /** Puts an owner's ended usage back as it was marked (usedMark): uses added since are taken back. */
  restoreUsed(owner: string, mark: UsedMark | undefined): void {
    const usage = this.#usage(owner);
    usage.cpuSeconds = mark?.cpuSeconds ?? 0;
    usage.at = mark?.at ?? 0;
  }

  /** One owner's standing at `now` (an owner with no record: nothing running, nothing used, factor 1). */
  share(owner: string, now: number): OwnerShare {
    return this.shares(now).get(owner) ?? { runningCpus: 0, recentCpuSeconds: 0, factor: 1 };
  }

  /** Every owner's standing at `now`: each owner with a record, and each user the shares tree names. */
  shares(now: number): Map<string, OwnerShare> {
    const usage = this.#usageAt(now);
    const factors = factorsOf(shareTreeOf(this.settings.tree, usage, this.settings.groupOf));
    const shares = new Map<string, OwnerShare>();
    for (const [owner, factor] of factors)
      shares.set(owner, {
        runningCpus: this.#owners.get(owner)?.runningCpus ?? 0,
        recentCpuSeconds: usage.get(owner) ?? 0,
        factor,
      });
    return shares;
  }

  /** The shares tree with every figure at `now` (`steward share`), with `also` in it whether they used anything or not. */
  tree(now: number, also: readonly string[] = []): ShareNode {
    const usage = this.#usageAt(now);
    return shareTreeOf(this.settings.tree, usage, this.settings.groupOf, [...usage.keys(), ...also]);
  }

  #usageAt(now: number): Map<string, number> {
    const usage = new Map<string, number>();
    for (const [owner, record] of this.#owners) usage.set(owner, this.#usageOf(record, now));
    return usage;
  }
}

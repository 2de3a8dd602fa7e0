// What the server watches of running attempts between heartbeats, for performance contracts and
// self-migration: progress samples and when the rate first fell below the contract, and the last
// requirements text each attempt sent. In memory only: after a server restart the watch starts
// afresh, so a slow attempt gets its grace again rather than being judged on samples now gone.

import type { ProgressSample } from "../scheduler/contracts.ts";

export interface AttemptWatch {
  /** Progress samples, oldest first, trimmed to what the rate window needs. */
  samples: ProgressSample[];
  /** When the attempt's rate was first measured below its contract (and stayed below), or null. */
  belowSince: number | null;
  /** The requirements text the attempt last sent (acted on once per distinct text). */
  requirementsText: string | null;
  /** Its contract was broken while no other host could run the job (reported once). */
  stayedForLackOfHosts: boolean;
}

export class AttemptWatches {
  readonly #watches = new Map<string, AttemptWatch>();

  get(key: string): AttemptWatch | undefined {
    return this.#watches.get(key);
  }

  /**
   * How to put an attempt's watch back as it is now (none: none), should the step that is about
   * to change it throw (reactor/writes.ts).
   */
  restorer(key: string): () => void {
    const watch = this.#watches.get(key);
    if (!watch) return () => this.#watches.delete(key);
    const before = { ...watch, samples: [...watch.samples] };
    return () => {
      Object.assign(watch, before);
      this.#watches.set(key, watch);
    };
  }

  watch(key: string): AttemptWatch {
    let watch = this.#watches.get(key);
    if (!watch) {
      watch = { samples: [], belowSince: null, requirementsText: null, stayedForLackOfHosts: false };
      this.#watches.set(key, watch);
    }
    return watch;
  }

  /**
   * Adds a sample; keeps those within `windowMs` of it plus the newest older one (the rate's
   * reference point), and the attempt's first sample while none is that old.
   */
  sample(key: string, sample: ProgressSample, windowMs: number): AttemptWatch {
    const watch = this.watch(key);
    const samples = watch.samples;
    samples.push(sample);
    const horizon = sample.at - windowMs;
    let reference = -1;
    for (let i = samples.length - 2; i >= 0; i--) {
      if (samples[i].at <= horizon) {
        reference = i;
        break;
      }
    }
    if (reference > 0) samples.splice(0, reference);
    return watch;
  }

  forget(key: string): void {
    this.#watches.delete(key);
  }

  get size(): number {
    return this.#watches.size;
  }
}

// Performance contracts (GrADS's Contract Monitor, GridWay's Performance Degradation Evaluator): a
// job may promise a progress rate, `contract: {minProgressPerMinute, graceSeconds}`; an attempt
// whose measured rate stays below it for graceSeconds, counted from when it first fell below, is
// migrated, and its host is ranked after the others for that job. Pure: samples and the time in,
// a verdict out; the state keeps the samples and when each attempt fell below (state/attempt-watches.ts).
//
// How the rate is measured: from the progress the attempt reported (heartbeat samples: fraction,
// server time), between its newest sample and a reference sample: the newest one at least
// CONTRACT_RATE_WINDOW_SECONDS older, or, while the attempt is younger than that, its first one.
// Only this attempt's samples count, so an attempt restarted from a checkpoint (whose first sample
// is already far along) is measured from where it resumed, not from zero.
//
// Not judged: an attempt that reported fewer than two samples (a job that never writes progress
// cannot be judged, it keeps its host), one that reported 1 (it is finishing), and one that has
// run for less than graceSeconds (a start, or a restart, always gets the grace in full).

import type { ProgressSample } from "./estimate.ts";
import type { StopEntry } from "./view.ts";

/** How far back the rate looks: long enough to smooth steps of a job that reports coarsely. */
export const CONTRACT_RATE_WINDOW_SECONDS = 60;

export interface Contract {
  /** Progress, as a fraction of the whole job, per minute. */
  minProgressPerMinute: number;
  graceSeconds: number;
}

export type { ProgressSample };

export interface ProgressRate {
  perMinute: number;
  /** The samples the rate is measured between. */
  from: ProgressSample;
  to: ProgressSample;
}

/** The attempt's progress rate over the window, or null with fewer than two samples apart in time. */
export function progressRate(
  samples: readonly ProgressSample[],
  windowSeconds = CONTRACT_RATE_WINDOW_SECONDS,
): ProgressRate | null {
  if (samples.length < 2) return null;
  const to = samples[samples.length - 1];
  const horizon = to.at - windowSeconds * 1000;
  let from = samples[0];
  for (let i = samples.length - 2; i >= 0; i--) {
    if (samples[i].at <= horizon) {
      from = samples[i];
      break;
    }
  }
  const spanMs = to.at - from.at;
  if (spanMs <= 0) return null;
  return { perMinute: ((to.fraction - from.fraction) * 60_000) / spanMs, from, to };
}

/** One running attempt of a job with a contract, as the monitor sees it. */
export interface ContractSubject {
  jobId: string;
  taskIndex: number;
  attempt: number;
  host: string;
  startedAt: number;
  contract: Contract;
  /** This attempt's progress samples, oldest first. */
  samples: readonly ProgressSample[];
  /** When its rate was first measured below the contract (and has stayed below since), or null. */
  belowSince: number | null;
}

/** The numbers behind a broken contract, for the job's event. */
export interface ContractNumbers {
  task: number;
  attempt: number;
  host: string;
  ratePerMinute: number;
  minProgressPerMinute: number;
  graceSeconds: number;
  belowSince: number;
  belowSeconds: number;
  windowSeconds: number;
  fromFraction: number;
  toFraction: number;
  measuredSeconds: number;
}

export interface ContractVerdict {
  /** The rate measured now, or null when the attempt is not judged. */
  ratePerMinute: number | null;
  /** What the state should keep as the attempt's belowSince. */
  belowSince: number | null;
  /** Set when the contract is broken: migrate the attempt elsewhere. */
  breach: { stop: StopEntry; numbers: ContractNumbers } | null;
}

/** Judges one attempt at `now`. */
export function judgeContract(
  subject: ContractSubject,
  now: number,
  windowSeconds = CONTRACT_RATE_WINDOW_SECONDS,
): ContractVerdict {
  const notJudged: ContractVerdict = { ratePerMinute: null, belowSince: null, breach: null };
  const last = subject.samples[subject.samples.length - 1];
  if (!last || last.fraction >= 1) return notJudged;
  const rate = progressRate(subject.samples, windowSeconds);
  if (!rate) return notJudged;
  const { minProgressPerMinute, graceSeconds } = subject.contract;
  if (rate.perMinute >= minProgressPerMinute)
    return { ratePerMinute: rate.perMinute, belowSince: null, breach: null };
  const belowSince = subject.belowSince ?? now;
  const graceMs = graceSeconds * 1000;
  const kept = { ratePerMinute: rate.perMinute, belowSince, breach: null };
  if (now - belowSince < graceMs || now - subject.startedAt < graceMs) return kept;
  const belowSeconds = Math.round((now - belowSince) / 1000);
  const numbers: ContractNumbers = {
    task: subject.taskIndex,
    attempt: subject.attempt,
    host: subject.host,
    ratePerMinute: rate.perMinute,
    minProgressPerMinute,
    graceSeconds,
    belowSince,
    belowSeconds,
    windowSeconds,
    fromFraction: rate.from.fraction,
    toFraction: rate.to.fraction,
    measuredSeconds: (rate.to.at - rate.from.at) / 1000,
  };
  return {
    ...kept,
    breach: {
      stop: {
        jobId: subject.jobId,
        taskIndex: subject.taskIndex,
        attempt: subject.attempt,
        intent: {
          outcome: "migrated",
          reason: {
            kind: "contract-broken",
            host: subject.host,
            ratePerMinute: rate.perMinute,
            minProgressPerMinute,
            belowSeconds,
          },
        },
        migrateTo: { to: null },
      },
      numbers,
    },
  };
}

// An attempt's start, reported to the server. A start is held back START_REPORT_DELAY_MS: a job that
// ends sooner is reported once, by its end (the server takes the end of an attempt it has not heard
// start as it takes any end), which saves a short task a report, a commit and an acknowledgement.
// A gang's rank reports its start at once: the other ranks wait for its coordinator's port.

import type { ReportEvent } from "../../common/protocol/messages.ts";
import type { Attempt } from "./attempt.ts";
import { attemptRef } from "./attempt-identity.ts";

/** How long a job's start waits to be reported. */
export const START_REPORT_DELAY_MS = 10;

export class StartReports {
  readonly #report: (event: ReportEvent) => void;
  /** Started attempts whose start is not reported yet, and the timer that reports them. */
  readonly #held = new Set<Attempt>();
  #timer: NodeJS.Timeout | null = null;

  constructor(report: (event: ReportEvent) => void) {
    this.#report = report;
  }

  /** The attempt's job has started (its pid is known). */
  started(attempt: Attempt): void {
    if (attempt.spec.gang) {
      this.#reportStarted(attempt);
      return;
    }
    this.#held.add(attempt);
    this.#timer ??= setTimeout(() => this.#reportHeld(), START_REPORT_DELAY_MS);
  }

  /** Reports nothing more (the agent stops). */
  stop(): void {
    if (this.#timer) clearTimeout(this.#timer);
  }

  /** Reports the starts held back, of the attempts that have not ended meanwhile. */
  #reportHeld(): void {
    this.#timer = null;
    for (const attempt of this.#held) if (!attempt.ended) this.#reportStarted(attempt);
    this.#held.clear();
  }

  #reportStarted(attempt: Attempt): void {
    const pid = attempt.pid;
    if (pid === null) return;
    // Rank 0 of a gang tells the server the coordinator's port, and the other ranks start with it.
    const coordinator = attempt.spec.gang?.rank === 0 ? attempt.spec.gang.coordinator : null;
    const coordinatorPort = coordinator
      ? Number(coordinator.slice(coordinator.lastIndexOf(":") + 1))
      : undefined;
    this.#report({
      kind: "started",
      ...attemptRef(attempt.spec),
      pid,
      ...(coordinatorPort ? { coordinatorPort } : {}),
    });
  }
}

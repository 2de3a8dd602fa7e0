// The attempts an agent holds: running, or ended with the end not yet acknowledged by the server.
// Found by key (job/task/attempt#rank) and by folder (the launcher names folders); forgotten once
// the server has an attempt's end, after the messages that came with that acknowledgement.

import type { Attempt } from "./attempt.ts";

export class HeldAttempts {
  readonly #byKey = new Map<string, Attempt>();
  readonly #byDir = new Map<string, Attempt>();
  /** Acknowledged ends not forgotten yet (forgetSoon), and the turn that forgets them. */
  readonly #acknowledged = new Set<Attempt>();
  #forgetTimer: NodeJS.Immediate | null = null;

  get size(): number {
    return this.#byKey.size;
  }

  values(): IterableIterator<Attempt> {
    return this.#byKey.values();
  }

  byKey(key: string): Attempt | undefined {
    return this.#byKey.get(key);
  }

  byDir(dir: string): Attempt | undefined {
    return this.#byDir.get(dir);
  }

  track(attempt: Attempt): void {
    this.#byKey.set(attempt.key, attempt);
    this.#byDir.set(attempt.dir, attempt);
  }

  /** The attempts held of (job, task, attempt): one, or a gang's ranks here (or only `rank`). */
  ranksOf(ref: { jobId: string; taskIndex: number; attempt: number; rank?: number }): Attempt[] {
    const found: Attempt[] = [];
    for (const attempt of this.#byKey.values()) {
      const { spec } = attempt;
      if (spec.jobId !== ref.jobId || spec.taskIndex !== ref.taskIndex || spec.attempt !== ref.attempt)
        continue;
      if (ref.rank !== undefined && spec.gang?.rank !== ref.rank) continue;
      found.push(attempt);
    }
    return found;
  }

  /** The slots the running attempts take. */
  busySlots(): number {
    let busy = 0;
    for (const attempt of this.#byKey.values()) if (!attempt.ended) busy += attempt.spec.cpus;
    return busy;
  }

  /** Lets go of an attempt and removes its folder and cgroup; once (a reconnect's acknowledgement may come after the first one's). */
  async forget(attempt: Attempt): Promise<void> {
    if (this.#byKey.get(attempt.key) !== attempt) return;
    this.#byKey.delete(attempt.key);
    this.#byDir.delete(attempt.dir);
    await attempt.cleanup().catch(() => {});
  }

  /**
   * Forgets an attempt whose end the server has, once the messages that came with the
   * acknowledgement are handled: the starts a commit sends with the acknowledgements of the ends
   * it holds are prepared and launched first, and the ended attempts' folders and cgroups retired
   * after, off the way of the next jobs.
   */
  forgetSoon(attempt: Attempt): void {
    this.#acknowledged.add(attempt);
    this.#forgetTimer ??= setImmediate(() => void this.#forgetAcknowledged());
  }

  /** Forgets at once the acknowledged attempts waiting for their turn (the agent stops). */
  async forgetWaiting(): Promise<void> {
    if (this.#forgetTimer === null) return;
    clearImmediate(this.#forgetTimer);
    await this.#forgetAcknowledged();
  }

  async #forgetAcknowledged(): Promise<void> {
    this.#forgetTimer = null;
    for (const attempt of [...this.#acknowledged]) {
      this.#acknowledged.delete(attempt);
      await this.forget(attempt);
    }
  }
}

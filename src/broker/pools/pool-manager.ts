// Keeps each batch-backed pool supplied with pilots while this server leads: every few seconds it
// reads the pools' pilots from the batch system (a failed listing keeps the last view: a command
// that failed is not a pilot that vanished), offers the ready work to the pools in order
// (pools/pool-demand.ts), and submits pilots within maxPilots and backlog. Failed submissions back
// off; after 3 in a row the pool is `unavailable` with the batch system's message until a pilot of
// it joins again. Pilots pending longer than maxQueueWaitSeconds (the pool's, or a job's shorter
// one) are cancelled and the pool takes no new work for a back-off: its work goes to other pools.
// Hosts of pilots that have left are removed. A pool's pilots are the jobs of its account, under
// its pilots' name, whose ids this broker recorded when it submitted them (pools/pilot-ledger.ts):
// no other job is counted or cancelled. Pilots run as the pool's account and get the pool token
// in a file of that account's (pools/pilot-account.ts, pools/pilot-files.ts).

import type { Logger } from "pino";
import type { PoolSpec } from "../../common/model/pools-file.ts";
import { steadyNow } from "../../common/time/clocks.ts";
import { DriverError, type PilotStatus } from "../drivers/driver.ts";
import { RunningQuotas } from "../scheduler/qos.ts";
import { infeasibility } from "../scheduler/stages/feasibility.ts";
import type { ClusterState } from "../state/cluster-state.ts";
import type { JobEntry } from "../state/job-entry.ts";
import type { PilotAccount } from "./pilot-account.ts";
import { pilotCommand, pilotHostName } from "./pilot-command.ts";
import {
  type PilotCounts,
  POOL_FAILURES_UNAVAILABLE,
  pilotsAllowed,
  pilotsToStart,
  poolRetrySeconds,
  queueWaitExceeded,
} from "./pilot-demand.ts";
import { preparePilotFiles } from "./pilot-files.ts";
import type { PilotLedger } from "./pilot-ledger.ts";
import { freeCpusOf, offerWork, type PoolOffer, pilotProbe } from "./pool-demand.ts";
import {
  newPoolRuntime,
  type PoolRuntime,
  type PoolRuntimeSource,
  pilotCounts,
  poolUnavailable,
} from "./pool-runtime.ts";
import { poolJoinToken } from "./pool-token.ts";

/** How often pools are looked after. */
export const POOL_TICK_MS = 2000;

export interface PoolStatus {
  name: string;
  driver: string;
  state: "ok" | "unavailable";
  reason: string | null;
  pilots: PilotCounts;
}

/** What a pool does for one job, for `steward explain`. */
export interface PoolNote {
  pool: string;
  state: "ok" | "unavailable";
  /** The sentence `steward explain` prints. */
  line: string;
}

/** The hosts and the queue of the cluster: what the pools read to size and tend their pilots. */
/** The QoS policy and running use, when the broker has them: work a running limit holds asks for no pilot. */
export type PoolCluster = Pick<ClusterState, "hosts" | "queue"> &
  Partial<Pick<ClusterState, "qos" | "runningUse">>;

/** What the pools need of the broker, which only the leader has (null while standby). */
export interface PoolClusterPort {
  /** The cluster while this server leads, else null (only the leader submits pilots). */
  state(): PoolCluster | null;
  /** The ids of the pilots this broker submitted, while it leads (else null). */
  ledger(): PilotLedger | null;
  /** Removes a host whose pilot has left the batch system (disconnected, nothing running). */
  forgetHost(name: string): Promise<void>;
}

export interface PoolManagerOptions extends PoolRuntimeSource {
  pools: readonly PoolSpec[];
  /** What the pools read of the leading broker and ask of it. */
  cluster: PoolClusterPort;
  serverUrl: () => string;
  /** Each pool's pilot account, by pool name (pools/pilot-account.ts resolvePoolAccounts). */
  accounts: ReadonlyMap<string, PilotAccount>;
  /** The `steward` executable a pilot runs. */
  steward: string;
  /** Pilots take no work this long before their walltime (scheduler/walltime.ts). */
  walltimeMarginSeconds: number;
  log: Logger;
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;

export class PoolManager {
  readonly #options: PoolManagerOptions;
  readonly #pools: PoolRuntime[];
  #timer: NodeJS.Timeout | null = null;
  #busy = false;

  constructor(options: PoolManagerOptions) {
    this.#options = options;
    this.#pools = options.pools.map((spec) => {
      const account = options.accounts.get(spec.name);
      if (!account) throw new Error(`pool ${spec.name}: no account resolved`);
      return newPoolRuntime(spec, account, options);
    });
  }

  start(): void {
    if (this.#pools.length === 0) return;
    this.#timer = setInterval(() => void this.tick(), POOL_TICK_MS);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
  }

  status(now = steadyNow()): PoolStatus[] {
    return this.#pools.map((pool) => {
      const why = poolUnavailable(pool, now);
      return {
        name: pool.spec.name,
        driver: pool.spec.driver,
        state: why === null ? "ok" : "unavailable",
        reason: why,
        pilots: pilotCounts(pool.pilots),
      };
    });
  }

  /** Which pools could run the job and what each is doing about it (`steward explain`). */
  explain(job: JobEntry, now = steadyNow()): PoolNote[] {
    return this.#pools.map((pool) => {
      const { name } = pool.spec;
      const unavailable = poolUnavailable(pool, now);
      const state = unavailable === null ? ("ok" as const) : ("unavailable" as const);
      const cannot = infeasibility(job, pilotProbe(pool.spec, this.#options.walltimeMarginSeconds));
      if (cannot !== null)
        return { pool: name, state, line: `${name}: its pilots cannot run the job: ${cannot}` };
      if (unavailable !== null) return { pool: name, state, line: `${name}: unavailable: ${unavailable}` };
      const pending = pool.pilots.filter((pilot) => pilot.state === "pending");
      const running = pool.pilots.filter((pilot) => pilot.state === "running").length;
      const parts: string[] = [];
      if (pending.length > 0) {
        const oldest = Math.min(...pending.map((pilot) => pool.waits.get(pilot.id)?.since ?? now));
        const reasons = [...new Set(pending.map((pilot) => pilot.reason).filter(Boolean))].join(", ");
        parts.push(
          `${plural(pending.length, "pilot")} pending in the batch queue for ${Math.round((now - oldest) / 1000)} s` +
            (reasons ? ` (${reasons})` : "") +
            ` (cancelled after ${pool.spec.maxQueueWaitSeconds} s)`,
        );
      }
      if (running > 0) parts.push(`${plural(running, "pilot")} running`);
      if (parts.length === 0) parts.push("no pilot now; one is submitted when the job's tasks find no room");
      return { pool: name, state, line: `${name}: ${parts.join(", ")}` };
    });
  }

  /** One round over the pools (one at a time; a round still running is not started again). */
  async tick(): Promise<void> {
    if (this.#busy) return;
    this.#busy = true;
    try {
      const now = steadyNow();
      const state = this.#options.cluster.state();
      const ledger = this.#options.cluster.ledger();
      if (!state || !ledger) return;
      for (const pool of this.#pools) await this.#refresh(pool, state, ledger, now);
      const margin = this.#options.walltimeMarginSeconds;
      const offers: PoolOffer[] = this.#pools.map((pool) => {
        const { spec } = pool;
        const counts = pilotCounts(pool.pilots);
        const submitting = now >= pool.nextSubmitAt && now >= pool.stalledUntil;
        const allowed = submitting ? pilotsAllowed({ ...spec, pilots: counts }) : 0;
        // Pilots still to bring their slots: pending ones, and running ones whose agent has not joined yet.
        const joining = pool.pilots.filter(
          (pilot) => pilot.state === "running" && !state.hosts.has(pilotHostName(spec.name, pilot.id)),
        ).length;
        return {
          name: spec.name,
          probe: pilotProbe(spec, margin),
          roomCpus:
            freeCpusOf(state, spec.name, now, margin) + (counts.pending + joining) * spec.slotsPerPilot,
          headroomCpus: allowed * spec.slotsPerPilot,
        };
      });
      const quotas = new RunningQuotas(state.qos, state.runningUse?.() ?? undefined);
      const demand = offerWork(state.queue.schedulable(), offers, now, quotas);
      for (const pool of this.#pools) {
        const wanted = demand.get(pool.spec.name);
        if (wanted && wanted.cpus > 0) await this.#submit(pool, wanted.cpus, wanted.maxQueueWaitSeconds, now);
      }
    } finally {
      this.#busy = false;
    }
  }

  /** Reads the pool's pilots from the batch system and acts on what changed. */
  async #refresh(pool: PoolRuntime, state: PoolCluster, ledger: PilotLedger, now: number): Promise<void> {
    let listed: PilotStatus[];
    try {
      listed = await pool.driver.list(pool.owner);
    } catch (error) {
      this.#options.log.warn(
        { pool: pool.spec.name, err: error },
        "pilots not listed; keeping the last view",
      );
      return;
    }
    listed = await this.#ownPilots(pool, listed, ledger);
    this.#countFailedStarts(pool, listed, state);
    pool.pilots = listed;
    const ids = new Set(listed.map((pilot) => pilot.id));
    for (const id of pool.waits.keys()) if (!ids.has(id)) pool.waits.delete(id);
    for (const id of pool.cancelled) if (!ids.has(id)) pool.cancelled.delete(id);
    for (const pilot of listed) {
      if (pilot.state === "pending" && !pool.waits.has(pilot.id))
        pool.waits.set(pilot.id, { since: now, limitSeconds: pool.spec.maxQueueWaitSeconds });
    }
    await this.#leaveLongQueue(pool, now);
    await this.#cancelLostPilots(pool, state);
    await this.#forgetDeparted(pool, ids, state);
  }

  /**
   * The listed jobs this broker submitted (recorded in the ledger); the others are logged once and
   * left alone. Recorded ids the batch system no longer lists have ended: they are forgotten.
   */
  async #ownPilots(pool: PoolRuntime, listed: PilotStatus[], ledger: PilotLedger): Promise<PilotStatus[]> {
    const recorded = ledger.ids(pool.spec.name);
    const own = listed.filter((pilot) => recorded.has(pilot.id));
    for (const pilot of listed) {
      if (recorded.has(pilot.id) || pool.ignored.has(pilot.id)) continue;
      pool.ignored.add(pilot.id);
      this.#options.log.warn(
        { pool: pool.spec.name, job: pilot.id, account: pool.owner.account },
        "a batch job named like the pool's pilots that this broker did not submit: not counted, not cancelled",
      );
    }
    const listedIds = new Set(listed.map((pilot) => pilot.id));
    for (const id of pool.ignored) if (!listedIds.has(id)) pool.ignored.delete(id);
    if (own.length !== recorded.size) {
      await ledger
        .record(
          pool.spec.name,
          own.map((pilot) => pilot.id),
        )
        .catch((error: unknown) => {
          this.#options.log.warn(
            { pool: pool.spec.name, err: error },
            "ended pilots not forgotten in the store",
          );
        });
    }
    return own;
  }

  /**
   * A pilot whose agent is lost (crashed, cut off) counts as gone even while the batch system still
   * runs its job: it is cancelled, so it neither holds a place under maxPilots nor burns the
   * allocation until its walltime.
   */
  async #cancelLostPilots(pool: PoolRuntime, state: PoolCluster): Promise<void> {
    for (const pilot of pool.pilots) {
      if (pilot.state !== "running" || pool.cancelled.has(pilot.id)) continue;
      const host = state.hosts.get(pilotHostName(pool.spec.name, pilot.id));
      if (host?.record.state !== "lost") continue;
      try {
        await pool.driver.cancel(pilot.id, pool.owner);
        pool.cancelled.add(pilot.id);
        pilot.state = "ending";
        this.#options.log.warn(
          { pool: pool.spec.name, pilot: pilot.id },
          "pilot's agent lost; pilot cancelled",
        );
      } catch (error) {
        this.#options.log.warn({ pool: pool.spec.name, pilot: pilot.id, err: error }, "pilot not cancelled");
      }
    }
  }

  /**
   * A pilot pending longer than it may wait: the pool's queue is not starting pilots (a partition
   * down, a long queue). Its pending pilots are cancelled and the pool takes no new work for a
   * back-off, so its work goes to the other pools; then it is tried again.
   */
  async #leaveLongQueue(pool: PoolRuntime, now: number): Promise<void> {
    const pending = pool.pilots.filter((pilot) => pilot.state === "pending");
    const stuck = pending.find((pilot) => {
      const wait = pool.waits.get(pilot.id);
      return wait !== undefined && queueWaitExceeded(wait.since, now, wait.limitSeconds);
    });
    if (!stuck) return;
    const { spec } = pool;
    const limit = pool.waits.get(stuck.id)!.limitSeconds;
    pool.stalls++;
    pool.stalledUntil = now + poolRetrySeconds(pool.stalls) * 1000;
    pool.stallReason =
      `pilot ${stuck.id} waited more than ${limit} s in the batch queue` +
      (stuck.reason ? ` (${stuck.reason})` : "") +
      `; its work goes to other pools, this pool is tried again in ${poolRetrySeconds(pool.stalls)} s`;
    this.#options.log.warn(
      { pool: spec.name, pilot: stuck.id, reason: stuck.reason },
      "pilots waited too long; cancelling",
    );
    for (const pilot of pending) {
      try {
        await pool.driver.cancel(pilot.id, pool.owner);
        pool.cancelled.add(pilot.id);
        pilot.state = "ending";
      } catch (error) {
        this.#options.log.warn({ pool: spec.name, pilot: pilot.id, err: error }, "pilot not cancelled");
      }
    }
  }

  /** Hosts of pilots the batch system no longer lists, once disconnected with nothing running, are removed. */
  async #forgetDeparted(pool: PoolRuntime, listed: ReadonlySet<string>, state: PoolCluster): Promise<void> {
    const prefix = pilotHostName(pool.spec.name, "");
    for (const host of [...state.hosts.values()]) {
      const { name } = host.record;
      if (host.record.pool !== pool.spec.name || !name.startsWith(prefix)) continue;
      if (listed.has(name.slice(prefix.length)) || host.connected || host.active.size > 0) continue;
      await this.#options.cluster.forgetHost(name).catch((error) => {
        this.#options.log.warn({ host: name, err: error }, "host of a departed pilot not removed");
      });
    }
  }

  async #submit(
    pool: PoolRuntime,
    cpusWanted: number,
    jobWaitSeconds: number | null,
    now: number,
  ): Promise<void> {
    const { log } = this.#options;
    const { spec } = pool;
    const wanted = pilotsToStart({
      cpusWanted,
      pilots: pilotCounts(pool.pilots),
      maxPilots: spec.maxPilots,
      backlog: spec.backlog,
      slotsPerPilot: spec.slotsPerPilot,
    });
    const limitSeconds = Math.min(spec.maxQueueWaitSeconds, jobWaitSeconds ?? Number.POSITIVE_INFINITY);
    if (wanted <= 0) return;
    const ledger = this.#options.cluster.ledger();
    if (!ledger) return;
    try {
      await preparePilotFiles(
        pool.dir,
        poolJoinToken(this.#options.joinToken, spec.name),
        pool.account.runAs,
      );
    } catch (error) {
      this.#failedSubmission(pool, error);
      return;
    }
    for (let i = 0; i < wanted; i++) {
      try {
        const id = await pool.driver.submit({
          pool: spec.name,
          owner: pool.owner,
          cpus: spec.slotsPerPilot,
          walltimeSeconds: spec.walltime,
          command: pilotCommand(spec, {
            steward: this.#options.steward,
            serverUrl: this.#options.serverUrl(),
            dir: pool.dir,
          }),
          logDir: pool.dir,
          partition: spec.partition,
          extraArgs: spec.sbatchArgs,
        });
        pool.pilots.push({ id, state: "pending", batchState: "SUBMITTED", reason: "" });
        pool.waits.set(id, { since: now, limitSeconds });
        log.info({ pool: spec.name, pilot: id }, "pilot submitted");
        // Recorded before the next round lists it: only recorded ids count as the pool's pilots.
        await ledger.record(spec.name, [...ledger.ids(spec.name), id]);
      } catch (error) {
        this.#failedSubmission(pool, error);
        return;
      }
    }
  }

  #failedSubmission(pool: PoolRuntime, error: unknown): void {
    pool.failures++;
    pool.reason = error instanceof DriverError ? error.message : String(error);
    pool.nextSubmitAt = steadyNow() + poolRetrySeconds(pool.failures) * 1000;
    this.#options.log.warn(
      { pool: pool.spec.name, failures: pool.failures, reason: pool.reason },
      "pilot not submitted",
    );
  }

  /**
   * A pilot that left the batch queue before its agent ever joined failed to start (a node that
   * failed, a script that could not run): counted with failed submissions, so a pool whose pilots
   * never come up backs off and turns unavailable instead of submitting forever. A pilot this
   * server cancelled is not counted.
   */
  #countFailedStarts(pool: PoolRuntime, listed: readonly PilotStatus[], state: PoolCluster): void {
    // A pilot whose agent joined shows the pool works: its failures and stalls are forgotten.
    if (listed.some((pilot) => state.hosts.get(pilotHostName(pool.spec.name, pilot.id))?.connected)) {
      if (pool.failures >= POOL_FAILURES_UNAVAILABLE || pool.stalls > 0)
        this.#options.log.info({ pool: pool.spec.name }, "pool available again");
      pool.failures = 0;
      pool.reason = null;
      pool.stalls = 0;
      pool.stalledUntil = 0;
      pool.stallReason = null;
    }
    const still = new Set(listed.map((pilot) => pilot.id));
    for (const pilot of pool.pilots) {
      if (still.has(pilot.id) || pool.cancelled.has(pilot.id)) continue;
      if (state.hosts.has(pilotHostName(pool.spec.name, pilot.id))) continue;
      pool.failures++;
      pool.reason = `pilot ${pilot.id} ended before its agent joined (${pilot.batchState.toLowerCase()}${pilot.reason ? `: ${pilot.reason}` : ""})`;
      pool.nextSubmitAt = steadyNow() + poolRetrySeconds(pool.failures) * 1000;
      this.#options.log.warn(
        { pool: pool.spec.name, pilot: pilot.id, failures: pool.failures },
        "pilot failed to start",
      );
    }
  }
}

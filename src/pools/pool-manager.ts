// Keeps each batch-backed pool supplied with pilots while this server leads: every few seconds it
// reads the pool's pilots from the batch system (a failed listing keeps the last view: a command
// that failed is not a pilot that vanished), works out what the pool's work needs, and submits
// pilots within maxPilots and backlog. Failed submissions back off; after 3 in a row the pool is
// `unavailable` with the batch system's message until a submission succeeds again.

import { join } from "node:path";
import type { Logger } from "pino";
import { type BatchDriver, DriverError, type PilotStatus } from "../drivers/driver.ts";
import type { PoolSpec } from "../model/pools-file.ts";
import type { ClusterState } from "../state/cluster-state.ts";
import {
  type PilotCounts,
  POOL_FAILURES_UNAVAILABLE,
  pilotsToStart,
  poolRetrySeconds,
} from "./pilot-demand.ts";
import { cpusWithoutRoom } from "./pool-demand.ts";

/** How often pools are looked after. */
export const POOL_TICK_MS = 2000;

export interface PoolStatus {
  name: string;
  driver: string;
  state: "ok" | "unavailable";
  reason: string | null;
  pilots: PilotCounts;
}

interface PoolRuntime {
  spec: PoolSpec;
  driver: BatchDriver;
  pilots: PilotStatus[];
  failures: number;
  reason: string | null;
  nextSubmitAt: number;
}

export interface PoolManagerOptions {
  pools: readonly PoolSpec[];
  drivers: Record<string, BatchDriver>;
  /** The cluster state while this server leads, else null (only the leader submits pilots). */
  state: () => ClusterState | null;
  serverUrl: () => string;
  joinToken: string;
  /** The `steward` executable a pilot runs. */
  steward: string;
  /** Where pilots write their logs and work folders (a file system the batch nodes reach). */
  pilotDir: string;
  log: Logger;
}

/** A pilot's host name: its pool and its batch job id. */
export function pilotHostName(pool: string, jobId: string): string {
  return `${pool}-${jobId}`;
}

function pilotCounts(pilots: readonly PilotStatus[]): PilotCounts {
  const counts: PilotCounts = { pending: 0, running: 0, ending: 0 };
  for (const pilot of pilots) counts[pilot.state]++;
  return counts;
}

const quote = (text: string) => `'${text.replaceAll("'", `'"'"'`)}'`;

export class PoolManager {
  readonly #options: PoolManagerOptions;
  readonly #pools: PoolRuntime[];
  #timer: NodeJS.Timeout | null = null;
  #busy = false;

  constructor(options: PoolManagerOptions) {
    this.#options = options;
    this.#pools = options.pools.map((spec) => ({
      spec,
      driver: options.drivers[spec.driver],
      pilots: [],
      failures: 0,
      reason: null,
      nextSubmitAt: 0,
    }));
  }

  start(): void {
    if (this.#pools.length === 0) return;
    this.#timer = setInterval(() => void this.tick(), POOL_TICK_MS);
    this.#timer.unref();
  }

  stop(): void {
    if (this.#timer) clearInterval(this.#timer);
  }

  status(): PoolStatus[] {
    return this.#pools.map((pool) => ({
      name: pool.spec.name,
      driver: pool.spec.driver,
      state: pool.failures >= POOL_FAILURES_UNAVAILABLE ? "unavailable" : "ok",
      reason: pool.failures >= POOL_FAILURES_UNAVAILABLE ? pool.reason : null,
      pilots: pilotCounts(pool.pilots),
    }));
  }

  /** One round over the pools (one at a time; a round still running is not started again). */
  async tick(): Promise<void> {
    if (this.#busy) return;
    this.#busy = true;
    try {
      for (const pool of this.#pools) await this.#tend(pool);
    } finally {
      this.#busy = false;
    }
  }

  async #tend(pool: PoolRuntime): Promise<void> {
    const { log } = this.#options;
    const state = this.#options.state();
    try {
      const listed = await pool.driver.list(pool.spec.name);
      if (state) this.#countFailedStarts(pool, listed, state);
      pool.pilots = listed;
    } catch (error) {
      log.warn({ pool: pool.spec.name, err: error }, "pilots not listed; keeping the last view");
    }
    if (!state || Date.now() < pool.nextSubmitAt) return;
    const { spec } = pool;
    const counts = pilotCounts(pool.pilots);
    const cap = spec.maxPilots * spec.slotsPerPilot;
    const wanted = pilotsToStart({
      cpusWithoutRoom: cpusWithoutRoom(state, spec, Date.now(), cap),
      pilots: counts,
      maxPilots: spec.maxPilots,
      backlog: spec.backlog,
      slotsPerPilot: spec.slotsPerPilot,
    });
    for (let i = 0; i < wanted; i++) {
      try {
        const id = await pool.driver.submit({
          pool: spec.name,
          cpus: spec.slotsPerPilot,
          walltimeSeconds: spec.walltime,
          command: this.#pilotCommand(spec),
          logDir: join(this.#options.pilotDir, spec.name),
          partition: spec.partition,
          extraArgs: spec.sbatchArgs,
        });
        pool.pilots.push({ id, state: "pending", batchState: "SUBMITTED", reason: "" });
        log.info({ pool: spec.name, pilot: id }, "pilot submitted");
      } catch (error) {
        pool.failures++;
        pool.reason = error instanceof DriverError ? error.message : String(error);
        pool.nextSubmitAt = Date.now() + poolRetrySeconds(pool.failures) * 1000;
        log.warn({ pool: spec.name, failures: pool.failures, reason: pool.reason }, "pilot not submitted");
        return;
      }
    }
  }

  /**
   * A pilot that left the batch queue before its agent ever joined failed to start (a node that
   * failed, a script that could not run): counted with failed submissions, so a pool whose pilots
   * never come up backs off and turns unavailable instead of submitting forever.
   */
  #countFailedStarts(pool: PoolRuntime, listed: readonly PilotStatus[], state: ClusterState): void {
    // A pilot whose agent joined shows the pool works: its failures are forgotten.
    if (listed.some((pilot) => state.hosts.get(pilotHostName(pool.spec.name, pilot.id))?.connected)) {
      if (pool.failures >= POOL_FAILURES_UNAVAILABLE)
        this.#options.log.info({ pool: pool.spec.name }, "pool available again");
      pool.failures = 0;
      pool.reason = null;
    }
    const still = new Set(listed.map((pilot) => pilot.id));
    for (const pilot of pool.pilots) {
      if (still.has(pilot.id) || state.hosts.has(pilotHostName(pool.spec.name, pilot.id))) continue;
      pool.failures++;
      pool.reason = `pilot ${pilot.id} ended before its agent joined (${pilot.batchState.toLowerCase()}${pilot.reason ? `: ${pilot.reason}` : ""})`;
      pool.nextSubmitAt = Date.now() + poolRetrySeconds(pool.failures) * 1000;
      this.#options.log.warn(
        { pool: pool.spec.name, pilot: pilot.id, failures: pool.failures },
        "pilot failed to start",
      );
    }
  }

  /** The agent a pilot runs: in its pool, with its slots, named after its batch job, leaving when idle. */
  #pilotCommand(spec: PoolSpec): string {
    const { steward, joinToken, pilotDir } = this.#options;
    const work = join(pilotDir, spec.name, "work-");
    return [
      quote(steward),
      "agent",
      `--server ${quote(this.#options.serverUrl())}`,
      `--token ${quote(joinToken)}`,
      `--pool ${quote(spec.name)}`,
      `--slots ${spec.slotsPerPilot}`,
      `--name ${quote(pilotHostName(spec.name, ""))}"$SLURM_JOB_ID"`,
      `--work ${quote(work)}"$SLURM_JOB_ID"`,
      `--idle-seconds ${spec.idleSeconds}`,
    ].join(" ");
  }
}

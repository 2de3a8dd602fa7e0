// Leader or standby. On SQLite a server leads from its start. On PostgreSQL several servers share
// the store: the one holding the lease leads (src/broker/store/store.ts, Elections) and runs the core; the
// others are standby, look at the lease every third of its length, and take the lead, with the
// next term, once it has run out. A leader that cannot renew its lease in time, or whose commit is
// refused for an older term, stops its core at once and is standby again: the term fences whatever
// it still tries to write.
//
// The store may also be unreachable for all of them (stopped, restarting, cut off, stalled). Every
// call to it is bounded (src/broker/store/pg-bounds.ts), and a failed one is the store's
// unavailability (store-unavailable.ts), which this server keeps (store-health.ts): a leader whose
// commit fails that way stops leading, as after any failed commit (its state in memory is ahead of
// the store's), and answers what waited for a commit 503; while no call answers, requests get 503
// naming the store and /healthz is not ready. The agents keep running their attempts and keep their
// reports; once the store answers again, an election round (a third of a lease) makes a leader,
// which loads the state from the store and gives every host a whole host timeout to re-attach.

import type { Logger } from "pino";
import type { QosPolicy } from "../../common/model/qos-file.ts";
import { monotonicMs, steadyNow } from "../../common/time/clocks.ts";
import type { ApiPorts } from "../api/ports.ts";
import type { PoolNote } from "../pools/pool-manager.ts";
import type { AgentLinks } from "../reactor/effects.ts";
import { NotLeaderError } from "../reactor/errors.ts";
import type { MetaschedulingPolicy } from "../scheduler/view.ts";
import type { JobEntry } from "../state/job-entry.ts";
import type { FairShareSettings } from "../state/owner-usage.ts";
import type { BlobStore } from "../store/blobs.ts";
import { GroupCommitter } from "../store/group-commit.ts";
import { StorageFullError } from "../store/storage-full.ts";
import { hasElections, StaleTermError, type Store } from "../store/store.ts";
import { StoreUnavailableError, storeUnavailableReason } from "../store/store-unavailable.ts";
import { apiReadModel } from "./api-reads.ts";
import { checkpointBlobsIn } from "./checkpoint-blobs.ts";
import { Core } from "./core.ts";
import { legacyCheckpoints } from "./legacy-checkpoints.ts";
import { StoreHealth, type StoreVerdict } from "./store-health.ts";

/** How long a leader's lease lasts unless renewed (`--lease-seconds`). */
export const DEFAULT_LEASE_SECONDS = 2;
/** A lease is renewed, and a standby looks at it, this many times per lease. */
const CHECKS_PER_LEASE = 3;

export interface BrokerOptions {
  store: Store;
  /** Where checkpoint objects live: the core deletes those it drops there. */
  blobs: BlobStore;
  heartbeatSeconds: number;
  hostTimeoutSeconds: number;
  leaseSeconds: number;
  policy?: Partial<MetaschedulingPolicy>;
  /** `--accounting-days`: how long removed jobs' accounting rows are kept. */
  accountingDays?: number;
  /** `--qos FILE`: the QoS tiers and groups' limits. */
  qos?: QosPolicy;
  /** `--shares`, `--fair-share-half-life`. */
  fairShare?: Partial<FairShareSettings>;
  /** The folders pools' pilots will share (`--pools FILE`, each pool's `shared`). */
  poolFolders?: readonly string[];
  log: Logger;
  /** Called when the lead is lost: the agents' connections go, so they find the new leader. */
  onDemoted: () => void;
  /** This server now leads with `core` (the metrics of its work follow it). */
  onLeading?: (core: Core) => void;
  /** A commit of the leader's was durable after `seconds`, answering `steps` steps (metrics). */
  onCommitted?: (seconds: number, steps: number) => void;
}

export class Broker {
  readonly #options: BrokerOptions;
  #core: Core | null = null;
  #committer: GroupCommitter | null = null;
  #links: AgentLinks = { send: () => false, disconnect: () => {} };
  #url = "";
  #term = 0;
  #leader: string | null = null;
  #renewedAt = 0;
  #stopped = false;
  #loop: Promise<void> | null = null;
  #wake: (() => void) | null = null;
  readonly #store = new StoreHealth(steadyNow());

  constructor(options: BrokerOptions) {
    this.#options = options;
  }

  /**
   * Whether the store answers, as this server's calls find it. With elections, a store that has
   * not answered a call for a whole lease counts as unavailable (a round is due every third of it);
   * on SQLite there is no such call, and only a failed commit tells (and ends the process).
   */
  storeVerdict(now = steadyNow()): StoreVerdict {
    const staleAfterMs = hasElections(this.#options.store)
      ? this.#options.leaseSeconds * 1000
      : Number.POSITIVE_INFINITY;
    return this.#store.verdict(now, staleAfterMs);
  }

  /** Store calls that failed for the store's unavailability, since start (metrics). */
  get storeFailures(): number {
    return this.#store.failures;
  }

  /** Notes how a call to the store ended: answered, or failed for its unavailability (or else). */
  #noteStore(error?: unknown): void {
    if (error === undefined) {
      this.#store.answered(steadyNow());
      return;
    }
    const reason = storeUnavailableReason(error);
    if (reason !== null) this.#store.failed(reason, steadyNow());
  }

  get isLeader(): boolean {
    return this.#core !== null;
  }

  /** The leader's URL when known (this server's own when it leads). */
  get leader(): string | null {
    return this.#core ? this.#url : this.#leader;
  }

  get term(): number {
    return this.#term;
  }

  get commits(): number {
    return this.#committer?.commits ?? 0;
  }

  /**
   * What /healthz tells: `ok` while the store answers (a standby is then ready to lead), with the
   * reason when not.
   */
  health(): {
    ok: boolean;
    role: "leader" | "standby";
    leader: string | null;
    term: number;
    reason?: string;
  } {
    const role = this.isLeader ? "leader" : "standby";
    const verdict = this.storeVerdict();
    if (!verdict.up)
      return {
        ok: false,
        role,
        leader: this.leader,
        term: this.#term,
        reason: `store unavailable: ${verdict.reason}`,
      };
    return { ok: true, role, leader: this.leader, term: this.#term };
  }

  /**
   * The core, when this server leads. Otherwise NotLeaderError, or StoreUnavailableError while
   * the store does not answer (no server can lead then).
   */
  core(): Core {
    if (!this.#core) throw this.#notLeading();
    return this.#core;
  }

  #notLeading(): Error {
    const verdict = this.storeVerdict();
    if (!verdict.up && this.#leader === null) return new StoreUnavailableError(verdict.reason);
    return new NotLeaderError(this.#leader);
  }

  setLinks(links: AgentLinks): void {
    this.#links = links;
    this.#core?.reactor.setLinks(links);
  }

  /** Starts leading (SQLite) or takes part in elections (PostgreSQL); the first round is done on return. */
  async start(url: string): Promise<void> {
    this.#url = url;
    const { store } = this.#options;
    if (!hasElections(store)) {
      await this.#lead(await nextTerm(store, this.#options.log));
      return;
    }
    await this.#electionRound();
    this.#loop = this.#elections();
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#wake?.();
    await this.#loop;
    const { store } = this.#options;
    const core = this.#core;
    if (core) {
      core.stop();
      await this.#committer?.flush();
      // A clean stop hands the lead over at once instead of after the lease.
      if (hasElections(store)) await store.resign(this.#term).catch(() => {});
    }
    this.#core = null;
  }

  async #elections(): Promise<void> {
    const everyMs = Math.max(100, (this.#options.leaseSeconds * 1000) / CHECKS_PER_LEASE);
    while (!this.#stopped) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, everyMs);
        this.#wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
      if (this.#stopped) return;
      await this.#electionRound();
    }
  }

  async #electionRound(): Promise<void> {
    const { store, leaseSeconds, log } = this.#options;
    if (!hasElections(store)) return;
    try {
      if (this.#core) {
        const renewed = await store.renewLease(this.#term, leaseSeconds);
        this.#noteStore();
        if (renewed) {
          this.#renewedAt = monotonicMs();
        } else {
          this.demote("another server took the lead");
        }
        return;
      }
      const info = await store.leadership();
      this.#noteStore();
      this.#term = Math.max(this.#term, info.term);
      this.#leader = info.leaseValid && info.leader !== this.#url ? info.leader : null;
      if (this.#leader !== null) return;
      const term = await store.tryLead(this.#url, leaseSeconds);
      if (term !== null) await this.#lead(term);
    } catch (error) {
      this.#noteStore(error);
      const reason = storeUnavailableReason(error);
      // The leader it knew of is only as fresh as the last answer: it may be as cut off as this one.
      if (reason !== null && !this.#core) this.#leader = null;
      log.warn(
        { err: error },
        reason === null ? "leader election failed" : `leader election: store unavailable: ${reason}`,
      );
    } finally {
      // A leader that could not renew within its lease may have lost it: it stops before anyone else starts.
      if (this.#core && hasElections(store) && monotonicMs() - this.#renewedAt >= leaseSeconds * 1000) {
        this.demote("the lease could not be renewed in time");
      }
    }
  }

  async #lead(term: number): Promise<void> {
    const { store, blobs, heartbeatSeconds, hostTimeoutSeconds, policy, log } = this.#options;
    this.#renewedAt = monotonicMs();
    const snapshot = await store.loadLive();
    const committer = new GroupCommitter(store, term);
    const onCommitted = this.#options.onCommitted;
    committer.onCommitted = (seconds, steps) => {
      this.#noteStore();
      onCommitted?.(seconds, steps);
    };
    // A store of an earlier version kept checkpoint manifests as blobs only: recorded once, below.
    const legacy = await legacyCheckpoints(snapshot, blobs);
    const core = new Core(committer, {
      heartbeatSeconds,
      hostTimeoutSeconds,
      policy,
      accountingDays: this.#options.accountingDays,
      qos: this.#options.qos,
      fairShare: this.#options.fairShare,
      poolFolders: this.#options.poolFolders,
      // With elections, a refused commit ends the lead (another leads, or the store is unavailable,
      // or the commit failed otherwise); on SQLite, any refused commit is fatal as before.
      onFatal: hasElections(store)
        ? (error) => {
            this.#noteStore(error);
            this.demote(whyCommitFailed(error));
          }
        : undefined,
    });
    core.reactor.setLinks(this.#links);
    core.reactor.setCheckpointBlobs(checkpointBlobsIn(blobs));
    core.recover(snapshot);
    if (legacy.parts.length > 0) {
      await core.checkpoints.recordLegacyParts(legacy.parts);
      log.info({ parts: legacy.parts.length }, "checkpoint manifests of an earlier version recorded");
    }
    for (const object of legacy.unnamed) await core.checkpoints.objectStored(object);
    core.start();
    this.#term = term;
    this.#committer = committer;
    this.#core = core;
    this.#leader = this.#url;
    this.#options.onLeading?.(core);
    log.info(
      { term, jobs: snapshot.jobs.length, tasks: snapshot.tasks.length, hosts: snapshot.hosts.length },
      "leading: recovered from the store",
    );
  }

  /** Stops leading at once: the core stops, the agents are let go, requests are sent to the leader. */
  demote(why: string): void {
    const core = this.#core;
    if (!core) return;
    core.stop();
    this.#core = null;
    this.#leader = null;
    // What waits for a commit is answered now (503), not when the store's bound runs out.
    this.#committer?.close(this.#notLeading());
    this.#committer = null;
    this.#options.log.warn({ term: this.#term, why }, "no longer leader: standby");
    this.#options.onDemoted();
  }
}

/**
 * The term a server on SQLite leads with: the next one, recorded. On a full disk it cannot be
 * recorded now, and the server leads all the same with the next term unrecorded: its first commit
 * records it (a commit of a newer term does), and meanwhile it serves reads and refuses writes (507)
 * instead of failing to start.
 */
async function nextTerm(store: Store, log: Logger): Promise<number> {
  try {
    return await store.beginTerm();
  } catch (error) {
    if (!(error instanceof StorageFullError)) throw error;
    log.warn(
      { err: error },
      "the store is full: the broker starts all the same; writes answer 507 until space is freed",
    );
    return (await store.currentTerm()) + 1;
  }
}

/** Why a commit failed, for the log line of a leader that stops leading for it. */
function whyCommitFailed(error: unknown): string {
  if (error instanceof StaleTermError) return "a commit was refused: another server leads";
  const reason = storeUnavailableReason(error);
  if (reason !== null) return `a commit failed: store unavailable: ${reason}`;
  return `a commit failed: ${error instanceof Error ? error.message : String(error)}`;
}

/** An object whose members are read from `current()` at each use: whichever core leads now. */
function leading<T extends object>(current: () => T): T {
  return new Proxy({} as T, {
    get(_target, property) {
      const target = current();
      const value = Reflect.get(target, property, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/**
 * The core as the gateway sees it: whichever core leads now. A call while standby throws
 * NotLeaderError (the API answers it with a redirect or 503).
 */
export function leadingCore(broker: Broker): Core {
  return leading(() => broker.core());
}

/**
 * The API's ports on whichever core leads now (NotLeaderError while standby, as above); its read
 * model reads a job's events and the accounting from `store`, and asks `explainPools` what each
 * batch-backed pool does for a job explained.
 */
export function leadingPorts(
  broker: Broker,
  store: Pick<Store, "accounting" | "events" | "eventsAfter">,
  explainPools: (job: JobEntry) => PoolNote[],
): ApiPorts {
  return {
    jobs: leading(() => broker.core().jobs),
    workflows: leading(() => broker.core().workflows),
    hosts: leading(() => broker.core().hosts),
    tokens: leading(() => broker.core().tokens),
    secrets: leading(() => broker.core().secrets),
    checkpoints: leading(() => broker.core().checkpoints),
    read: apiReadModel(() => broker.core().read, store, explainPools),
  };
}

// The broker's core, put together: the reactor over the cluster state (src/broker/reactor/, src/broker/state/),
// the commands that run one handler each per request (src/broker/reactor/commands/), the read model that
// answers queries (src/broker/reactor/read-model.ts), and the state the agents' reports keep between
// commits. The API is handed the commands and the read model as its ports (src/broker/api/ports.ts).

import type { HostFacts } from "../../common/model/host-facts.ts";
import { DEFAULT_QOS_POLICY, type QosPolicy } from "../../common/model/qos-file.ts";
import type { HeartbeatMessage } from "../../common/protocol/messages.ts";
import { steadyNow } from "../../common/time/clocks.ts";
import { agentCommands } from "../reactor/commands/agents.ts";
import { checkpointCommands } from "../reactor/commands/checkpoints.ts";
import type { CommandContext } from "../reactor/commands/context.ts";
import { hostCommands } from "../reactor/commands/hosts.ts";
import { jobCommands } from "../reactor/commands/jobs.ts";
import { secretCommands } from "../reactor/commands/secrets.ts";
import { tokenCommands } from "../reactor/commands/tokens.ts";
import { workflowCommands } from "../reactor/commands/workflows.ts";
import { purgeAccounting, setMeta } from "../reactor/handlers/broker-records.ts";
import { forgetHost } from "../reactor/handlers/control.ts";
import { heartbeatReported } from "../reactor/handlers/heartbeat.ts";
import { walltimeDue } from "../reactor/handlers/walltime.ts";
import { IdBlock } from "../reactor/id-block.ts";
import type {
  AgentCommands,
  CheckpointCommands,
  HostCommands,
  JobCommands,
  SecretCommands,
  TokenCommands,
  WorkflowCommands,
} from "../reactor/ports.ts";
import { Reactor } from "../reactor/reactor.ts";
import { ReadModel } from "../reactor/read-model.ts";
import { policyOf } from "../scheduler/policy.ts";
import type { MetaschedulingPolicy } from "../scheduler/view.ts";
import { ClusterState } from "../state/cluster-state.ts";
import type { FairShareSettings } from "../state/owner-usage.ts";
import { recoverState } from "../state/recover.ts";
import { agentDetached, agentSeen, checkpointTransferObserved, heartbeatSeen } from "../state/soft-state.ts";
import type { GroupCommitter } from "../store/group-commit.ts";
import { StaleTermError, type StoreSnapshot } from "../store/store.ts";

export interface CoreOptions {
  heartbeatSeconds: number;
  hostTimeoutSeconds: number;
  now?: () => number;
  random?: () => number;
  onFatal?: (error: unknown) => void;
  policy?: Partial<MetaschedulingPolicy>;
  /** Accounting rows of removed jobs are kept this many days after their attempt ended (default 365). */
  accountingDays?: number;
  /** The QoS tiers and groups' limits (`--qos FILE`); absent: the one tier `normal`, no limits. */
  qos?: QosPolicy;
  /** The shares tree and the usage half-life (`--shares`, `--fair-share-half-life`). */
  fairShare?: Partial<FairShareSettings>;
  /** The folders pools' pilots will share (the pools file's `shared`). */
  poolFolders?: readonly string[];
}

/** `--accounting-days`' default: a year of `steward acct` after a job is removed. */
export const DEFAULT_ACCOUNTING_DAYS = 365;

/** How often the leader drops the accounting rows older than it keeps (and once at start). */
const ACCOUNTING_PURGE_MS = 3_600_000;

/** Workflow ids reserved at once (a workflow is rarer than a job: a small block skips few ids at a stop). */
const WORKFLOW_ID_BLOCK_SIZE = 4;

export class Core {
  readonly reactor: Reactor;
  /** What is asked of the cluster: jobs, headers, hosts, explain, tokens. */
  readonly read: ReadModel;
  /** The user's requests on jobs: submit, cancel, hold, release, migrate, remove. */
  readonly jobs: JobCommands;
  readonly workflows: WorkflowCommands;
  /** The admin's requests on hosts: drain, undrain, remove. */
  readonly hosts: HostCommands;
  /** Tokens created and revoked. */
  readonly tokens: TokenCommands;
  /** Users' secrets set and removed. */
  readonly secrets: SecretCommands;
  /** Checkpoint objects stored and manifests committed by the agents' uploads. */
  readonly checkpoints: CheckpointCommands & { noteTransfer(bytes: number, ms: number): void };
  /** The agents' hellos and reports of attempts started and ended. */
  readonly agents: AgentCommands;
  readonly #accountingDays: number;
  readonly #qos: QosPolicy;
  readonly #fairShare: Partial<FairShareSettings>;
  readonly #poolFolders: readonly string[];
  #purgeTimer: NodeJS.Timeout | null = null;

  constructor(committer: GroupCommitter, options: CoreOptions) {
    this.#accountingDays = options.accountingDays ?? DEFAULT_ACCOUNTING_DAYS;
    this.#qos = options.qos ?? DEFAULT_QOS_POLICY;
    this.#fairShare = options.fairShare ?? {};
    this.#poolFolders = options.poolFolders ?? [];
    const state = new ClusterState(this.#fairShare, this.#qos);
    state.poolFolders = this.#poolFolders;
    this.reactor = new Reactor(state, committer, {
      hostTimeoutSeconds: options.hostTimeoutSeconds,
      now: options.now ?? steadyNow,
      random: options.random ?? Math.random,
      onFatal: options.onFatal,
      policy: options.policy,
    });
    // A reservation refused for an older term means another server leads: as fatal as a refused commit.
    const jobIds = new IdBlock((count) =>
      committer.store.reserveIds(committer.term, "job", count).catch((error: unknown) => {
        if (error instanceof StaleTermError) this.reactor.fatal(error);
        throw error;
      }),
    );
    this.read = new ReadModel(this.reactor, committer.store, () => jobIds.lowestInFlight());
    const context: CommandContext = { reactor: this.reactor, committer, read: this.read };
    this.jobs = jobCommands(context, jobIds);
    const workflowIds = new IdBlock(
      (count) =>
        committer.store.reserveIds(committer.term, "workflow", count).catch((error: unknown) => {
          if (error instanceof StaleTermError) this.reactor.fatal(error);
          throw error;
        }),
      WORKFLOW_ID_BLOCK_SIZE,
    );
    this.workflows = workflowCommands(context, workflowIds, jobIds);
    this.hosts = hostCommands(context);
    this.tokens = tokenCommands(context);
    this.secrets = secretCommands(context);
    this.checkpoints = {
      ...checkpointCommands(context),
      noteTransfer: (bytes: number, ms: number) => this.noteCheckpointTransfer(bytes, ms),
    };
    this.agents = agentCommands(context);
  }

  private get state(): ClusterState {
    return this.reactor.state;
  }

  /** Rebuilds the state from the store (GridWay's recover). Hosts get one host timeout to re-attach. */
  recover(snapshot: StoreSnapshot): void {
    const state = recoverState(snapshot, this.reactor.now(), this.#fairShare, this.#qos);
    state.poolFolders = this.#poolFolders;
    this.reactor.state = state;
  }

  /** A meta entry as last set (recovered from the store), or undefined. */
  meta(key: string): string | undefined {
    return this.state.meta.get(key);
  }

  /** Sets a meta entry, through the reactor; durable when the promise resolves. */
  setMeta(key: string, value: string): Promise<void> {
    return this.reactor.run((step) => setMeta(step, key, value));
  }

  /**
   * Drops the accounting rows of removed jobs whose attempts ended more than --accounting-days
   * ago, through the reactor; durable when the promise resolves. No state in memory holds them.
   */
  purgeAccounting(): Promise<void> {
    return this.reactor.run((step) => purgeAccounting(step, this.#accountingDays));
  }

  /** Starts the reactor, and the hourly purge of old accounting rows (once at start too). */
  start(): void {
    this.reactor.start();
    // A refused commit (another server leads) is the reactor's to notice; a later round retries.
    const purge = () => void this.purgeAccounting().catch(() => {});
    purge();
    this.#purgeTimer = setInterval(purge, ACCOUNTING_PURGE_MS);
    this.#purgeTimer.unref();
  }

  stop(): void {
    if (this.#purgeTimer) clearInterval(this.#purgeTimer);
    this.#purgeTimer = null;
    this.reactor.stop();
  }

  // ---- the state the agents' reports keep between commits

  /** A checkpoint object of `bytes` took `ms` to arrive: the rescheduler prices moves with the observed rate. */
  noteCheckpointTransfer(bytes: number, ms: number): void {
    checkpointTransferObserved(this.state, bytes, ms);
  }

  /**
   * A heartbeat renews the lease and brings facts, progress, the host's cache counters and what
   * its cache holds (soft state: state/soft-state.ts); the jobs'
   * progress and requirements files may then decide a stop: performance contracts, self-migration.
   * Resolves once any such decision is committed.
   */
  heartbeat(
    name: string,
    facts: HostFacts,
    progress: HeartbeatMessage["progress"] = [],
    requirements: HeartbeatMessage["requirements"] = [],
    cache?: HeartbeatMessage["cache"],
    held?: HeartbeatMessage["cacheHeld"],
  ): Promise<void> {
    const now = this.reactor.now();
    const wasFull = this.state.hosts.get(name)?.facts.diskFull === true;
    heartbeatSeen(this.state, now, name, facts, progress, cache, held);
    // A work folder that has room again: the work that waited for it is placed now, not at the next discovery.
    if (wasFull && facts.diskFull !== true) this.reactor.kick();
    const margin = policyOf(this.reactor.options.policy).walltimeMarginSeconds;
    const walltime = walltimeDue({ state: this.state, now }, name, margin);
    if (progress.length === 0 && requirements.length === 0 && !walltime) return Promise.resolve();
    return this.reactor.run((step) => heartbeatReported(step, name, progress, requirements, margin));
  }

  /** Any message from the agent renews its lease. */
  touch(name: string): void {
    agentSeen(this.state, this.reactor.now(), name);
  }

  /** Removes a host that is gone for good (a pilot that left), if disconnected and running nothing. */
  forgetHost(name: string): Promise<void> {
    return this.reactor.run((step) => forgetHost(step, name));
  }

  detachHost(name: string): void {
    agentDetached(this.state, name);
  }
}

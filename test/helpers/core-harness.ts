// A Core on a real SQLite store (in memory or a file) with a recording link in place of the
// network, and a clock the test moves: for tests of the reactor's rules.

import { setImmediate as tick } from "node:timers/promises";
import { Core } from "../../src/broker/server/core.ts";
import type { JobEntry } from "../../src/broker/state/job-entry.ts";
import { GroupCommitter } from "../../src/broker/store/group-commit.ts";
import { SqliteStore } from "../../src/broker/store/sqlite.ts";
import type { Store } from "../../src/broker/store/store.ts";
import type { JobSpec } from "../../src/common/model/job-spec.ts";
import type { ServerMessage } from "../../src/common/protocol/messages.ts";

export { ended, facts, hello } from "./agent-messages.ts";

/** Lets the reactor's passes, commits and effects run. */
export async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await tick();
  await new Promise((resolve) => setTimeout(resolve, 5));
}

/**
 * A submit through the core's command, as the API makes it: `inputs` already stored, under `id`
 * when given (else a new one), with the owner's `submitKey` and `dependencyOwner` (null: any).
 */
export async function submitOn(
  core: Core,
  spec: JobSpec,
  owner: string,
  inputs: string[] = [],
  id?: string,
  submitKey: string | null = null,
  dependencyOwner: string | null = null,
): Promise<JobEntry> {
  const { job } = await core.jobs.submit({ owner, submitKey, dependencyOwner }, async () => ({
    spec,
    inputs,
    id,
  }));
  // The job's own entry (a repeated submit's job that ended and left memory: as read from the store).
  return core.read.findJob(job.record.id) ?? core.read.readJob(job.record.id);
}

export type StartSent = Extract<ServerMessage, { type: "start" }> & { host: string };
export type StopSent = Extract<ServerMessage, { type: "stop" }> & { host: string };

export class Harness {
  readonly store: Store;
  core!: Core;
  now = 1_000_000;
  sent: { host: string; message: ServerMessage }[] = [];
  disconnected: string[] = [];
  fatal: unknown[] = [];
  /** Whether sends reach the agent (false: as if its socket were gone). */
  deliver = true;

  constructor(store: Store = new SqliteStore(":memory:")) {
    this.store = store;
  }

  /** Opens the store (first time), takes a new term and starts a Core recovered from the store. */
  async start(): Promise<Core> {
    await this.store.open();
    const term = await this.store.beginTerm();
    const core = new Core(new GroupCommitter(this.store, term), {
      heartbeatSeconds: 1,
      hostTimeoutSeconds: 3,
      now: () => this.now,
      random: () => 0.5,
      onFatal: (error) => this.fatal.push(error),
    });
    core.reactor.setLinks({
      send: (host, message) => {
        if (!this.deliver) return false;
        this.sent.push({ host, message });
        return true;
      },
      disconnect: (host) => this.disconnected.push(host),
    });
    core.recover(await this.store.loadLive());
    this.core = core;
    return core;
  }

  /** A server restart: the old core stops, a new one recovers from the same store. */
  async restart(): Promise<Core> {
    this.core.reactor.stop();
    return this.start();
  }

  starts(): StartSent[] {
    return this.sent
      .filter((entry) => entry.message.type === "start")
      .map((entry) => ({
        host: entry.host,
        ...(entry.message as Extract<ServerMessage, { type: "start" }>),
      }));
  }

  stops(): StopSent[] {
    return this.sent
      .filter((entry) => entry.message.type === "stop")
      .map((entry) => ({ host: entry.host, ...(entry.message as Extract<ServerMessage, { type: "stop" }>) }));
  }

  async close(): Promise<void> {
    this.core.reactor.stop();
    await this.store.close();
  }
}

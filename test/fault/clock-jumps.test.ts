// Clock jumps: the wall clocks of a broker (on PostgreSQL, so leading under a lease) and of an agent
// are stepped forward by an hour and back, and back past the true time and forward again, while a
// job with a time limit, a job retrying with back-offs and an array of short tasks run. Nothing
// may notice: no host is taken for lost, the leader keeps its term, the time limit fires at its
// time, back-offs last what they say, events keep their order, each task has one result, and the
// wall time measured of each attempt is its true length (docs/guarantees.md, "Clock jumps").
//
// The clocks are stepped with libfaketime (Debian's libfaketime): preloaded into the broker and the
// agent, it adds the offset read from a file to the wall clock (CLOCK_REALTIME) and leaves the
// monotonic clock alone (FAKETIME_DONT_FAKE_MONOTONIC), as a step of the system's clock would;
// the offset file is read anew at every reading (FAKETIME_NO_CACHE), so a step takes at once.
// Under CI the test fails without libfaketime or PostgreSQL; elsewhere it is skipped, saying why.

import { execFileSync } from "node:child_process";
import { accessSync, constants, existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, describe, expect, it, test } from "vitest";
import type { Host } from "../../src/common/api/hosts.ts";
import { dropSchema, freshSchema, PG_URL, postgresUnreachable, SAFE_PG_URL } from "../helpers/postgres.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  getJob,
  type JobJson,
  openEventStream,
  ROOT,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";
import { RESET, startForwarder, type TcpForwarder } from "../helpers/tcp-forwarder.ts";

const HOUR_S = 3600;
/** The job's time limit, and when (after its start) the agent's clock is stepped around it. */
const LIMIT_S = 8;
const SHORT_TASKS = 16;
/** The leader's lease. */
const LEASE_S = 2;

/** libfaketime's library for programs with threads (Node has them), wherever Debian put it. */
function libfaketime(): string | null {
  const roots = ["/usr/lib", "/usr/local/lib", "/usr/lib64"];
  const candidates = roots.flatMap((root) => {
    const subfolders = existsSync(root)
      ? readdirSync(root, { withFileTypes: true })
          .filter((entry) => entry.isDirectory())
          .map((entry) => join(root, entry.name))
      : [];
    return [root, ...subfolders].map((folder) => join(folder, "faketime", "libfaketimeMT.so.1"));
  });
  return candidates.find((path) => existsSync(path)) ?? null;
}

/** The Node that bin/steward runs (the pinned one, as the script picks it). */
function stewardNode(): string {
  const pinned = join(ROOT, "node_modules/node/bin/node");
  try {
    accessSync(pinned, constants.X_OK);
    return pinned;
  } catch {
    return process.execPath;
  }
}

/** A clock whose wall time is stepped through `offsetFile` (seconds added, "+3600" or "-3600"). */
class SteppedClock {
  readonly library: string;
  readonly offsetFile: string;

  constructor(library: string, folder: string, name: string) {
    this.library = library;
    this.offsetFile = join(folder, `${name}.faketime`);
    this.step(0);
  }

  /** The wall clock reads true time plus `seconds` from now on. */
  step(seconds: number): void {
    writeFileSync(this.offsetFile, `${seconds >= 0 ? "+" : ""}${seconds}\n`);
  }

  /** The prefix that runs a program under this clock. */
  get prefix(): string[] {
    return [
      "env",
      `LD_PRELOAD=${this.library}`,
      `FAKETIME_TIMESTAMP_FILE=${this.offsetFile}`,
      "FAKETIME_NO_CACHE=1",
      "FAKETIME_DONT_FAKE_MONOTONIC=1",
    ];
  }
}

const library = libfaketime();
const unreachable = await postgresUnreachable();
const missing = library === null ? "libfaketime (apt-get install libfaketime)" : null;
const why = missing ?? (unreachable ? `PostgreSQL at ${SAFE_PG_URL}: ${unreachable}` : null);

const dirs: string[] = [];
const schemas: string[] = [];
let server: (StewardProcess & { joinToken: string }) | null = null;
let agent: AgentProcess | null = null;
let forwarder: TcpForwarder | null = null;

afterAll(async () => {
  await agent?.crash();
  await server?.stop();
  await forwarder?.close();
  cleanup(...dirs);
  for (const schema of schemas) await dropSchema(schema);
});

interface Health {
  ok: boolean;
  role: string;
  term: number;
}

/** What the test saw of the broker (every 50 ms) and the host (every 200 ms) while the clocks moved. */
interface Watch {
  healths: (Health | null)[];
  hostStates: string[];
  stop: () => Promise<void>;
}

function watch(on: StewardProcess, hostName: string): Watch {
  const seen: Watch = { healths: [], hostStates: [], stop: async () => {} };
  let running = true;
  // The health often (a store taken for silent shows only until the next answer), the host less so.
  const healths = (async () => {
    while (running) {
      const health = await fetch(`${on.url}/healthz`, { signal: AbortSignal.timeout(2000) })
        .then((response) => response.json() as Promise<Health>)
        .catch(() => null);
      seen.healths.push(health);
      await sleep(50);
    }
  })();
  const hosts = (async () => {
    while (running) {
      const listed = (await api(on, "GET", "/api/v1/hosts").catch(() => [])) as Host[];
      const host = listed.find((each) => each.name === hostName);
      seen.hostStates.push(host ? `${host.state}${host.connected ? "" : " (detached)"}` : "missing");
      await sleep(200);
    }
  })();
  seen.stop = async () => {
    running = false;
    await Promise.all([healths, hosts]);
  };
  return seen;
}

const attemptMs = (attempt: { startedAt: string; endedAt?: string | null }) =>
  Date.parse(attempt.endedAt ?? "") - Date.parse(attempt.startedAt);

if (why && process.env.CI) {
  test("libfaketime and PostgreSQL are there for the clock-jump test", () => {
    throw new Error(`the clock-jump test needs ${why}`);
  });
} else if (why) {
  console.warn(`skipping the clock-jump test: it needs ${why}`);
  test.skip(`clock jumps: needs ${why}`, () => {});
} else {
  describe("the wall clocks of the broker and an agent stepped by an hour, forward and back", () => {
    it("libfaketime steps the wall clock of the Node that Steward runs as it runs, not its monotonic clock", () => {
      const folder = tempDir("steward-clock-");
      dirs.push(folder);
      const clock = new SteppedClock(library!, folder, "probe");
      // The program reads both clocks, steps its own wall clock an hour forward through the offset
      // file, and reads them again: the wall clock moved an hour, the monotonic one a moment.
      const probe = [
        "const { writeFileSync } = require('node:fs');",
        "const wall = Date.now(), monotonic = performance.now();",
        "writeFileSync(process.argv[1], '+3600\\n');",
        "process.stdout.write(JSON.stringify({ wall: Date.now() - wall, monotonic: performance.now() - monotonic }));",
      ].join(" ");
      const [command, ...args] = clock.prefix;
      const read = execFileSync(command, [...args, stewardNode(), "-e", probe, clock.offsetFile], {
        encoding: "utf8",
      });
      const moved = JSON.parse(read) as { wall: number; monotonic: number };
      expect(moved.monotonic).toBeLessThan(1000);
      expect(Math.abs(moved.wall - HOUR_S * 1000)).toBeLessThan(1000);
    });

    it("takes no host for lost, keeps the lead, keeps time limits, back-offs and event order, and one result per task", async () => {
      const folder = tempDir("steward-clock-");
      dirs.push(folder);
      const schema = freshSchema("steward_clock");
      schemas.push(schema);
      // The broker reaches PostgreSQL through a forwarder, cut at the end.
      const pg = new URL(PG_URL);
      forwarder = await startForwarder({ target: { host: pg.hostname, port: Number(pg.port || 5432) } });
      const store = new URL(PG_URL);
      store.host = `${forwarder.host}:${forwarder.port}`;
      store.searchParams.set("schema", schema);
      const brokerClock = new SteppedClock(library!, folder, "broker");
      const agentClock = new SteppedClock(library!, folder, "agent");
      server = await startServerProcess({
        heartbeatSeconds: 1,
        hostTimeoutSeconds: 3,
        args: ["--store", store.toString(), "--lease-seconds", String(LEASE_S)],
        prefix: brokerClock.prefix,
      });
      const on = server;
      dirs.push(on.data);
      await waitFor("the broker to lead", async () => {
        const response = await fetch(`${on.url}/healthz`);
        return ((await response.json()) as Health).role === "leader";
      });
      agent = await startAgentProcess({
        name: "stepped",
        slots: 4,
        servers: [on.url],
        joinToken: on.joinToken,
        prefix: agentClock.prefix,
      });
      await waitFor("the agent to attach", async () =>
        ((await api(on, "GET", "/api/v1/hosts")) as Host[]).some(
          (host) => host.name === "stepped" && host.connected,
        ),
      );
      const term = ((await (await fetch(`${on.url}/healthz`)).json()) as Health).term;
      const events = await openEventStream(on);
      const seen = watch(on, "stepped");
      const ran = join(folder, "ran");
      writeFileSync(ran, "");

      // One slot for the limited job, one for the retried one, two for the array.
      const limited = (await api(on, "POST", "/api/v1/jobs", {
        command: "sleep 60",
        timeLimitSeconds: LIMIT_S,
      })) as { id: string };
      const retried = (await api(on, "POST", "/api/v1/jobs", {
        command: 'test "$STEWARD_ATTEMPT" -ge 3 || exit 3',
        retry: { maxAttempts: 4, backoffSeconds: 2 },
      })) as { id: string };
      const short = (await api(on, "POST", "/api/v1/jobs", {
        command: `echo "$STEWARD_TASK_INDEX" >> ${ran}; sleep 1`,
        array: { count: SHORT_TASKS, parallel: 2 },
      })) as { id: string };
      await waitFor("the limited job to run", async () => (await getJob(on, limited.id)).state === "running");
      const limitedSeenRunning = performance.now();

      // The steps, in seconds after the limited job was seen running: each clock forward an hour and
      // back to the true time, then back an hour past it and forward again. The broker's forward
      // step meets the retried job's first back-off, its backward step the second one; the agent's
      // backward step meets short tasks ending, its forward step the time limit.
      const steps: [number, SteppedClock, number][] = [
        [1.0, brokerClock, +HOUR_S],
        [2.5, brokerClock, 0],
        [3.0, agentClock, -HOUR_S],
        [4.5, agentClock, 0],
        [5.0, brokerClock, -HOUR_S],
        [6.5, agentClock, +HOUR_S],
        [8.5, brokerClock, 0],
        [LIMIT_S + 3, agentClock, 0],
      ];
      for (const [at, clock, offset] of steps) {
        await sleep(Math.max(0, at * 1000 - (performance.now() - limitedSeenRunning)));
        clock.step(offset);
      }

      // Each job as it ended, or as it stood after 30 s more (the assertions below say what went wrong).
      const deadline = performance.now() + 30_000;
      const ended = (id: string) =>
        waitForJobEnd(on, id, Math.max(1000, deadline - performance.now())).catch(() => getJob(on, id));
      const limitedEnd = await ended(limited.id);
      const limitedSeenEnded = performance.now();
      const retriedEnd = await ended(retried.id);
      const shortEnd = await ended(short.id);
      await seen.stop();
      const jobs: JobJson[] = [limitedEnd, retriedEnd, shortEnd];

      // The host was never lost, nor detached (a lost host is disconnected, and its agent says so
      // as it reconnects, quicker than the polls may see); the broker led all along, in one term.
      expect(agent.output()).not.toMatch(/reconnecting/);
      expect(new Set(seen.hostStates)).toEqual(new Set(["ready"]));
      const answered = seen.healths.filter((health) => health !== null);
      expect(answered.length).toBeGreaterThan(seen.healths.length / 2);
      for (const health of answered) expect(health).toMatchObject({ ok: true, role: "leader", term });
      const attempts = jobs.flatMap((job) => job.tasks.flatMap((task) => task.attempts));
      expect(attempts.filter((attempt) => attempt.outcome === "lost")).toEqual([]);

      // The time limit fired at its time: not early, not an hour late, nor never.
      const [limitedAttempt] = limitedEnd.tasks[0].attempts;
      expect(limitedEnd.tasks[0].attempts).toHaveLength(1);
      expect(limitedAttempt.outcome).toBe("timed_out");
      expect(limitedSeenEnded - limitedSeenRunning).toBeGreaterThanOrEqual(LIMIT_S * 1000 - 1000);
      expect(attemptMs(limitedAttempt)).toBeGreaterThanOrEqual(LIMIT_S * 1000 - 100);
      expect(attemptMs(limitedAttempt)).toBeLessThan(LIMIT_S * 1000 + 4000);
      expect(limitedSeenEnded - limitedSeenRunning).toBeLessThan(LIMIT_S * 1000 + 5000);
      expect(limitedAttempt.usage?.wallSeconds).toBeGreaterThanOrEqual(LIMIT_S - 0.1);
      expect(limitedAttempt.usage?.wallSeconds).toBeLessThan(LIMIT_S + 4);

      // The back-offs lasted 2 s and 4 s (±20 % jitter), neither cut short nor an hour long.
      expect(retriedEnd.state).toBe("succeeded");
      const tries = retriedEnd.tasks[0].attempts;
      expect(tries.map((attempt) => attempt.outcome)).toEqual(["failed", "failed", "succeeded"]);
      const gap = (a: number) => Date.parse(tries[a + 1].startedAt) - Date.parse(tries[a].endedAt!);
      expect(gap(0)).toBeGreaterThanOrEqual(1600);
      expect(gap(0)).toBeLessThan(2400 + 2000);
      expect(gap(1)).toBeGreaterThanOrEqual(3200);
      expect(gap(1)).toBeLessThan(4800 + 2000);

      // Each short task ran once and has one result, its measured wall time its true length.
      expect(shortEnd.state).toBe("succeeded");
      for (const task of shortEnd.tasks) {
        expect(task.attempts.map((attempt) => attempt.outcome)).toEqual(["succeeded"]);
        expect(task.attempts[0].usage?.wallSeconds).toBeGreaterThanOrEqual(0.9);
        expect(task.attempts[0].usage?.wallSeconds).toBeLessThan(6);
      }
      const lines = readFileSync(ran, "utf8").trim().split("\n").map(Number);
      expect(lines.sort((a, b) => a - b)).toEqual([...Array(SHORT_TASKS).keys()]);

      // Events keep their order: the stream's ids rise, and each job's times never go back.
      const lastId = Math.max(...jobs.flatMap((job) => job.events.map((event) => event.id)));
      await events.until("the jobs' events on the stream", (received) =>
        received.some((event) => event.eventId >= lastId),
      );
      events.close();
      const ids = events.received.map((event) => event.eventId);
      expect(ids).toEqual([...ids].sort((a, b) => a - b));
      expect(new Set(ids).size).toBe(ids.length);
      for (const job of jobs) {
        const times = job.events.map((event) => Date.parse(event.at));
        expect(times).toEqual([...times].sort((a, b) => a - b));
        expect(job.events.map((event) => event.id)).toEqual(
          job.events.map((event) => event.id).sort((a, b) => a - b),
        );
      }
      expect(events.received.filter((event) => / lost/.test(event.message))).toEqual([]);

      // Nor does a step back make the lease last longer: the database cut off and the leader's
      // clock then set back an hour, it stops leading once its lease has run out by the monotonic
      // clock, before another broker could take the lead (rather than an hour later).
      forwarder.setMode(RESET);
      const cut = performance.now();
      brokerClock.step(-HOUR_S);
      await waitFor(
        "the leader cut off to stop leading",
        async () => {
          const response = await fetch(`${on.url}/healthz`, { signal: AbortSignal.timeout(1000) });
          return ((await response.json()) as Health).role === "standby";
        },
        LEASE_S * 1000 + 5000,
      );
      expect(performance.now() - cut).toBeLessThan(LEASE_S * 1000 + 2000);
    }, 120_000);
  });
}

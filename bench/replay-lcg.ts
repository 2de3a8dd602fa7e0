// replay: the first 2,000 jobs of the LCG-2005-1 grid trace (Parallel Workloads Archive) replayed
// through the broker's real core (reactor, scheduler, SQLite store in memory) on 40 simulated hosts
// of mixed speeds (1, 2, 4 and 8), with a simulated clock: the agents are simulated (a job's run
// time is its trace run time divided by its host's speed; progress and checkpoints are reported as
// real agents do; a stopped job resumes from its checkpoint), so days of trace take a minute. The
// figure is the mean response time (submit to end) with rescheduling on versus off.

import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { setImmediate as turn } from "node:timers/promises";
import { gunzipSync } from "node:zlib";
import type { MetaschedulingPolicy } from "../src/broker/scheduler/view.ts";
import { Core } from "../src/broker/server/core.ts";
import { GroupCommitter } from "../src/broker/store/group-commit.ts";
import { SqliteStore } from "../src/broker/store/sqlite.ts";
import type { HostFacts } from "../src/common/model/host-facts.ts";
import { validateJobSpec } from "../src/common/model/job-spec.ts";
import type { HelloMessage, ServerMessage } from "../src/common/protocol/messages.ts";
import { type Benchmark, REPOSITORY, round } from "./benchmark.ts";

const TRACE = process.env.STEWARD_LCG_TRACE ?? join(REPOSITORY, "bench/workloads/LCG-2005-1.swf.gz");
const JOBS = 2000;
const HOSTS = 40;
const SLOTS = 2;
const SPEEDS = [1, 2, 4, 8];
const HEARTBEAT_SECONDS = 30;
const CHECKPOINT_SECONDS = 60;
const CHECKPOINT_BYTES = 10_000_000;
/** A stop takes this long: SIGTERM, the job's last checkpoint, its upload. */
const STOP_SECONDS = 2;

interface TraceJob {
  submitAt: number;
  runSeconds: number;
}

/** The first `count` jobs with a run time, submit times from 0 (SWF fields 2 and 4). */
/**
 * The trace's jobs in submit order, at most `count`; those without a run time (0 or -1: cancelled
 * before they ran) are left out unless `withoutRunTime` (a replay that runs `true` takes them all).
 */
export function readTrace(path: string, count: number, withoutRunTime = false): TraceJob[] {
  const text = gunzipSync(readFileSync(path)).toString("utf8");
  const jobs: TraceJob[] = [];
  for (const line of text.split("\n")) {
    if (line.startsWith(";") || line.trim() === "") continue;
    const fields = line.trim().split(/\s+/).map(Number);
    if (fields[3] <= 0 && !withoutRunTime) continue;
    jobs.push({ submitAt: fields[1], runSeconds: Math.max(0, fields[3]) });
    if (jobs.length === count) break;
  }
  const first = jobs[0]?.submitAt ?? 0;
  return jobs.map((job) => ({ ...job, submitAt: job.submitAt - first }));
}

function facts(name: string, speed: number): HostFacts {
  return {
    name,
    pool: "default",
    os: "linux",
    arch: "x86_64",
    cpus: SLOTS,
    memoryMb: 8192,
    memFreeMb: 8192,
    load1: 0,
    cpuFree: 1,
    diskFreeMb: 100_000,
    speed,
    labels: {},
    slotsFree: SLOTS,
  };
}

interface SimAttempt {
  jobId: string;
  attempt: number;
  host: string;
  speed: number;
  fraction: number;
  checkpointAt: number;
  stopAt: number | null;
  stopOutcome: "cancelled" | "preempted" | "migrated" | "lost" | null;
}

/** A seeded generator, so both runs see the same jitter. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

export async function replay(trace: TraceJob[], policy: Partial<MetaschedulingPolicy>) {
  const store = new SqliteStore(":memory:");
  await store.open();
  let now = 0;
  const sent: { host: string; message: ServerMessage }[] = [];
  const core = new Core(new GroupCommitter(store, await store.beginTerm()), {
    heartbeatSeconds: HEARTBEAT_SECONDS,
    hostTimeoutSeconds: 1e9,
    now: () => now * 1000,
    random: seeded(7),
    onFatal: (error) => {
      throw error;
    },
    policy,
  });
  core.reactor.setLinks({
    send: (host, message) => {
      sent.push({ host, message });
      return true;
    },
    disconnect: () => {},
  });
  core.recover(await store.load());
  const speedOf = new Map<string, number>();
  for (let i = 0; i < HOSTS; i++) {
    const name = `h${i}`;
    const speed = SPEEDS[i % SPEEDS.length];
    speedOf.set(name, speed);
    const hello: HelloMessage = {
      type: "hello",
      v: 1,
      name,
      token: "",
      pool: "default",
      slots: SLOTS,
      labels: {},
      facts: facts(name, speed),
      attempts: [],
    };
    await core.agents.attachHost(hello);
  }

  const spec = validateJobSpec({ command: "true", checkpoint: { intervalSeconds: CHECKPOINT_SECONDS } });
  const runSeconds = new Map<string, number>();
  const submittedAt = new Map<string, number>();
  const resumeFrom = new Map<string, number>();
  const running = new Map<string, SimAttempt>();
  const responses: number[] = [];
  let migrations = 0;
  let nextArrival = 0;
  let nextHeartbeat = HEARTBEAT_SECONDS;

  const settle = async () => {
    for (let i = 0; i < 12; i++) await turn();
  };
  const takeMessages = async () => {
    await settle();
    for (const { host, message } of sent.splice(0)) {
      if (message.type === "start") {
        const key = `${message.jobId}/${message.attempt}`;
        running.set(key, {
          jobId: message.jobId,
          attempt: message.attempt,
          host,
          speed: speedOf.get(host)!,
          fraction: resumeFrom.get(message.jobId) ?? 0,
          checkpointAt: now + CHECKPOINT_SECONDS,
          stopAt: null,
          stopOutcome: null,
        });
        await core.agents.attemptStarted(host, message.jobId, 0, message.attempt);
      } else if (message.type === "stop") {
        const attempt = running.get(`${message.jobId}/${message.attempt}`);
        if (attempt && attempt.stopAt === null) {
          attempt.stopAt = now + STOP_SECONDS;
          attempt.stopOutcome = message.outcome;
        }
      }
    }
  };
  const finishAt = (attempt: SimAttempt) =>
    attempt.stopAt ?? now + ((1 - attempt.fraction) * runSeconds.get(attempt.jobId)!) / attempt.speed;

  while (responses.length < trace.length) {
    let next = nextHeartbeat;
    if (nextArrival < trace.length) next = Math.min(next, trace[nextArrival].submitAt);
    for (const attempt of running.values()) next = Math.min(next, finishAt(attempt));
    next = Math.max(next, now);
    // Every running job gets on with its work until then.
    for (const attempt of running.values()) {
      if (attempt.stopAt !== null && attempt.stopAt < next) continue;
      attempt.fraction = Math.min(
        1,
        attempt.fraction + ((next - now) * attempt.speed) / runSeconds.get(attempt.jobId)!,
      );
    }
    now = next;
    while (nextArrival < trace.length && trace[nextArrival].submitAt <= now) {
      const { job } = await core.jobs.submit(
        { owner: "lcg", submitKey: null, dependencyOwner: null },
        async () => ({
          spec,
          inputs: [],
        }),
      );
      runSeconds.set(job.record.id, trace[nextArrival].runSeconds);
      submittedAt.set(job.record.id, now);
      nextArrival++;
    }
    for (const [key, attempt] of [...running]) {
      const ends = attempt.stopAt !== null ? attempt.stopAt <= now : attempt.fraction >= 1 - 1e-9;
      if (!ends) continue;
      running.delete(key);
      const outcome = attempt.stopAt !== null ? attempt.stopOutcome! : "succeeded";
      if (outcome === "migrated") migrations++;
      if (outcome === "succeeded") responses.push(now - submittedAt.get(attempt.jobId)!);
      else resumeFrom.set(attempt.jobId, attempt.fraction);
      await core.agents.attemptEnded(attempt.host, {
        kind: "ended",
        jobId: attempt.jobId,
        taskIndex: 0,
        attempt: attempt.attempt,
        outcome,
        exitCode: outcome === "succeeded" ? 0 : null,
        reason: null,
        outputs: [],
      });
    }
    if (now >= nextHeartbeat) {
      nextHeartbeat = now + HEARTBEAT_SECONDS;
      const progress = new Map<
        string,
        { jobId: string; taskIndex: number; attempt: number; fraction: number }[]
      >();
      for (const attempt of running.values()) {
        if (attempt.stopAt !== null) continue;
        const list = progress.get(attempt.host) ?? [];
        list.push({
          jobId: attempt.jobId,
          taskIndex: 0,
          attempt: attempt.attempt,
          fraction: attempt.fraction,
        });
        progress.set(attempt.host, list);
        if (now >= attempt.checkpointAt) {
          attempt.checkpointAt = now + CHECKPOINT_SECONDS;
          // One object of CHECKPOINT_BYTES, named as the agent names it, then the manifest naming it.
          const sha256 = createHash("sha256")
            .update(`${attempt.jobId}/${attempt.attempt}/${now}`)
            .digest("hex");
          const file = { path: "state", sha256, bytes: CHECKPOINT_BYTES };
          const at = { jobId: attempt.jobId, taskIndex: 0 };
          await core.checkpoints.objectStored({ ...at, ranks: [0], sha256, bytes: CHECKPOINT_BYTES });
          await core.checkpoints.commit({ ...at, attempt: attempt.attempt, manifest: { files: [file] } });
        }
      }
      for (const [name, speed] of speedOf)
        await core.heartbeat(name, facts(name, speed), progress.get(name) ?? []);
      core.reactor.tick();
    }
    await takeMessages();
  }
  core.reactor.stop();
  await store.close();
  const mean = responses.reduce((sum, value) => sum + value, 0) / responses.length;
  return { meanResponseSeconds: mean, migrations, simulatedSeconds: now };
}

export const replayLcgBenchmark: Benchmark = {
  name: "replay",
  description: `the first ${JOBS} jobs of LCG-2005-1 on ${HOSTS} simulated hosts of speeds ${SPEEDS.join("/")}: mean response time, rescheduling on vs off`,
  async run({ progress }) {
    if (!existsSync(TRACE)) {
      progress(`replay: no trace at ${TRACE} (set STEWARD_LCG_TRACE); skipped`);
      return { replay: { skipped: `no trace at ${TRACE}` } };
    }
    const trace = readTrace(TRACE, JOBS);
    const results: Record<string, unknown> = {};
    for (const [label, policy] of [
      ["reschedulingOff", { reschedule: false }],
      ["reschedulingOn", { reschedule: true }],
    ] as const) {
      const started = performance.now();
      const result = await replay(trace, policy);
      results[label] = {
        meanResponseSeconds: round(result.meanResponseSeconds, 1),
        migrations: result.migrations,
        simulatedHours: round(result.simulatedSeconds / 3600, 1),
        wallSeconds: round((performance.now() - started) / 1000, 1),
      };
      progress(
        `replay ${label}: mean response ${round(result.meanResponseSeconds, 1)} s, ${result.migrations} migrations (${round((performance.now() - started) / 1000, 1)} s of wall time)`,
      );
    }
    return { replay: { lcg2000: results } };
  },
};

// A long history: a SQLite store holding 1,000,000 ended tasks (100 finished arrays of 10,000,
// each task with its attempt) and 10,000 live ones (one pending array), written straight through
// the store; then `steward server` on it, timed from start to its first answer (recovery: load and
// rebuild the state), and its memory at rest. Targets of the performance issue: under 5 s and
// under 300 MB.

import { type ChildProcess, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { SqliteStore } from "../src/broker/store/sqlite.ts";
import type { Change } from "../src/broker/store/store.ts";
import { validateJobSpec } from "../src/common/model/job-spec.ts";
import { newAttempt, newTask } from "../src/common/model/new-records.ts";
import type { AttemptRecord, JobRecord, TaskRecord } from "../src/common/model/records.ts";
import { type Benchmark, pollUntil, REPOSITORY, round } from "./benchmark.ts";
import { freePort } from "./steward-process.ts";

const ENDED_JOBS = 100;
const TASKS_PER_JOB = 10_000;
const LIVE_TASKS = 10_000;

function rssMb(pid: number): number | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const match = /^VmRSS:\s+(\d+) kB/m.exec(status);
    return match ? round(Number(match[1]) / 1024, 1) : null;
  } catch {
    return null;
  }
}

async function fillStore(path: string, progress: (message: string) => void): Promise<void> {
  const store = new SqliteStore(path);
  await store.open();
  const term = await store.beginTerm();
  const spec = validateJobSpec({ command: "true", array: { count: TASKS_PER_JOB } });
  const at = Date.now() - 86_400_000;
  const jobOf = (id: string, state: JobRecord["state"], count: number): JobRecord => ({
    id,
    name: `history-${id}`,
    owner: "alice",
    state,
    priority: 0,
    held: false,
    cancelRequested: false,
    createdAt: at,
    endedAt: state === "succeeded" ? at + 60_000 : null,
    spec: { ...spec, array: { count } },
    inputs: [],
    inputDigests: null,
    dynamicRequirements: null,
    submitKey: null,
    slowHosts: [],
    workflow: null,
  });
  for (let j = 1; j <= ENDED_JOBS; j++) {
    const id = String(j);
    const tasks: TaskRecord[] = [];
    const changes: Change[] = [{ op: "putJob", job: jobOf(id, "succeeded", TASKS_PER_JOB) }];
    for (let i = 0; i < TASKS_PER_JOB; i++) {
      const task = { ...newTask(id, i, "succeeded"), attempts: 1, resultAttempt: 1 };
      tasks.push(task);
      const attempt: AttemptRecord = {
        ...newAttempt(task, `node-${i % 50}`, at + 1000),
        state: "ended",
        outcome: "succeeded",
        exitCode: 0,
        endedAt: at + 2000,
      };
      changes.push({ op: "putAttempt", attempt });
    }
    changes.push({ op: "putTasks", tasks });
    await store.commit(term, changes);
    if (j % 20 === 0) progress(`recovery: ${j * TASKS_PER_JOB} ended tasks written`);
  }
  const live = String(ENDED_JOBS + 1);
  const pending: TaskRecord[] = [];
  for (let i = 0; i < LIVE_TASKS; i++) pending.push(newTask(live, i, "pending"));
  await store.commit(term, [
    { op: "putJob", job: jobOf(live, "pending", LIVE_TASKS) },
    { op: "putTasks", tasks: pending },
    { op: "setMeta", key: "bench", value: "recovery" },
  ]);
  await store.reserveIds(term, "job", ENDED_JOBS + 1);
  await store.close();
}

export const recoveryBenchmark: Benchmark = {
  name: "recovery",
  description: `start-up with a long history: ${(ENDED_JOBS * TASKS_PER_JOB).toLocaleString("en")} ended tasks and ${LIVE_TASKS.toLocaleString("en")} live ones, start to first answer, and memory at rest`,
  async run({ progress }) {
    const root = mkdtempSync(join(tmpdir(), "steward-bench-recovery-"));
    let child: ChildProcess | null = null;
    try {
      const data = join(root, "data");
      mkdirSync(data, { recursive: true });
      const fillStart = performance.now();
      await fillStore(join(data, "steward.db"), progress);
      progress(`recovery: store filled in ${round((performance.now() - fillStart) / 1000, 1)} s`);
      const port = await freePort();
      const start = performance.now();
      const profile = process.env.STEWARD_BENCH_RECOVERY_PROFILE;
      child = spawn(join(REPOSITORY, "bin", "steward"), ["server", "--data", data, "--port", String(port)], {
        env: { ...process.env, ...(profile ? { NODE_OPTIONS: `--cpu-prof --cpu-prof-dir=${profile}` } : {}) },
        stdio: ["ignore", "ignore", "ignore"],
      });
      const started = child;
      await pollUntil(
        "recovery: the server answering",
        async () => {
          if (started.exitCode !== null) throw new Error(`steward server exited ${started.exitCode}`);
          const response = await fetch(`http://127.0.0.1:${port}/healthz`).catch(() => null);
          return response?.ok ? true : undefined;
        },
        { intervalMs: 20, timeoutMs: 300_000 },
      );
      const recoverySeconds = round((performance.now() - start) / 1000, 2);
      progress(`recovery: the server answered ${recoverySeconds} s after start`);
      await new Promise((done) => setTimeout(done, 5000));
      const rss = started.pid ? rssMb(started.pid) : null;
      progress(`recovery: ${rss} MB resident at rest`);
      return {
        recovery: {
          endedTasks: ENDED_JOBS * TASKS_PER_JOB,
          liveTasks: LIVE_TASKS,
          startToFirstAnswerSeconds: recoverySeconds,
          rssMbAtRest: rss,
        },
      };
    } finally {
      child?.kill(process.env.STEWARD_BENCH_RECOVERY_PROFILE ? "SIGINT" : "SIGKILL");
      await new Promise((done) => setTimeout(done, process.env.STEWARD_BENCH_RECOVERY_PROFILE ? 3000 : 0));
      rmSync(root, { recursive: true, force: true });
    }
  },
};

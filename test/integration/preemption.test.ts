// Preemption with real processes (GrADS Permission Service): a priority-10 job that finds every
// slot held by priority-0 checkpointing jobs past 20 % progress stops one of them (the one with
// the most work left), which resumes from its checkpoint later; and a high job waits instead when
// a low job is about to end.

import { afterEach, describe, expect, it } from "vitest";
import {
  type AgentProcess,
  api,
  cleanup,
  getJob,
  type JobJson,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

/** A counter of `steps` steps of `stepSeconds`, its count checkpointed, its progress reported. */
function counter(name: string, steps: number, stepSeconds: number, priority = 0) {
  return {
    name,
    priority,
    command: [
      'state="$STEWARD_CHECKPOINT_DIR/count"',
      'i=$(cat "$state" 2>/dev/null || echo 0)',
      'echo "start at $i attempt=$STEWARD_ATTEMPT"',
      `while [ "$i" -lt ${steps} ]; do`,
      `  sleep ${stepSeconds}`,
      "  i=$((i + 1))",
      '  echo "$i" > "$state.tmp" && mv "$state.tmp" "$state"',
      `  echo "$i" | awk '{ print $1 / ${steps} }' > "$STEWARD_PROGRESS_FILE"`,
      "done",
    ].join("\n"),
    checkpoint: { intervalSeconds: 1, graceSeconds: 5 },
  };
}

let server: (StewardProcess & { joinToken: string }) | undefined;
let agent: AgentProcess | undefined;

async function start(slots: number): Promise<StewardProcess & { joinToken: string }> {
  server = await startServerProcess({
    heartbeatSeconds: 1,
    hostTimeoutSeconds: 5,
    args: ["--preempt-wait-seconds", "5"],
  });
  agent = await startAgentProcess({ name: "p1", slots, servers: [server.url], joinToken: server.joinToken });
  const running = server;
  await waitFor("the host", async () => (await api(running, "GET", "/api/v1/hosts")).length === 1);
  return server;
}

afterEach(async () => {
  await agent?.crash();
  await server?.stop();
  cleanup(...(agent ? [agent.work] : []), ...(server ? [server.data] : []));
  agent = undefined;
  server = undefined;
});

async function submit(target: StewardProcess, spec: unknown): Promise<string> {
  return ((await api(target, "POST", "/api/v1/jobs", spec)) as { id: string }).id;
}

/** The progress the server knows of a job's task 0 (0 before any report). */
async function progressOf(target: StewardProcess, id: string): Promise<number> {
  const job = (await getJob(target, id)) as JobJson & { tasks: { progress: { fraction: number } | null }[] };
  return job.tasks[0].progress?.fraction ?? 0;
}

const runningAttempt = (job: JobJson) => job.tasks[0].attempts.find((attempt) => attempt.state === "running");

describe("preemption", () => {
  it("a high-priority job stops one low job past 20 %, which resumes from its checkpoint", async () => {
    const s = await start(2);
    // 60 steps of 0.25 s: 15 s each; the second has less done, so more left: it is the one stopped.
    const first = await submit(s, counter("low-1", 60, 0.25));
    await waitFor("low-1 past 30 %", async () => (await progressOf(s, first)) >= 0.3, 30_000);
    const second = await submit(s, counter("low-2", 60, 0.25));
    await waitFor("low-2 past 20 %", async () => (await progressOf(s, second)) >= 0.22, 30_000);
    await waitFor("checkpoints of both", async () => {
      const jobs = await Promise.all([getJob(s, first), getJob(s, second)]);
      return jobs.every(
        (job) => (job as unknown as { tasks: { checkpoint: unknown }[] }).tasks[0].checkpoint,
      );
    });

    const explained = (await api(s, "GET", `/api/v1/jobs/${second}/explain`)) as {
      running: { preemption: { candidate: boolean; reason: string } | null }[];
    };
    expect(explained.running[0].preemption).toMatchObject({ candidate: true });

    const submittedAt = Date.now();
    const high = await submit(s, { name: "high", priority: 10, command: "sleep 2" });
    await waitFor("the high job to run", async () => runningAttempt(await getJob(s, high)), 15_000, 100);
    const startedAfterMs = Date.now() - submittedAt;
    expect(startedAfterMs).toBeLessThan(15_000);

    const ends = await Promise.all([high, first, second].map((id) => waitForJobEnd(s, id, 90_000)));
    expect(ends.map((job) => job.state)).toStrictEqual(["succeeded", "succeeded", "succeeded"]);
    const preempted = ends
      .flatMap((job) => job.tasks[0].attempts.map((attempt) => ({ job: job.id, ...attempt })))
      .filter((attempt) => attempt.outcome === "preempted");
    expect(preempted).toHaveLength(1);
    expect(preempted[0].job).toBe(second);
    expect(preempted[0].reason).toBe(`preempted for job ${high} (priority 10)`);
    const resumed = ends[2].tasks[0].attempts;
    expect(resumed).toHaveLength(2);
    const log = await fetch(`${s.url}/api/v1/jobs/${second}/logs?task=0&attempt=2`, {
      headers: { authorization: `Bearer ${s.token}` },
    }).then((response) => response.text());
    const resumedAt = Number(/start at (\d+) attempt=2/.exec(log)?.[1] ?? 0);
    expect(resumedAt).toBeGreaterThanOrEqual(12); // it had passed 20 % of 60 steps
    const events = ends[2].events.filter((event) => event.kind === "preempt");
    expect(events).toHaveLength(1);
    expect(events[0].message).toMatch(new RegExp(`preempted for job ${high}`));
    console.log(
      `preemption: high job running ${startedAfterMs} ms after submit; low-2 resumed at step ${resumedAt}`,
    );
  });

  it("a high-priority job waits for a low job about to end instead of preempting it", async () => {
    const s = await start(1);
    // 40 steps of 0.2 s: 8 s; at 65 % about 3 s are left, under the 5 s wait.
    const low = await submit(s, counter("low", 40, 0.2));
    await waitFor("low past 65 %", async () => (await progressOf(s, low)) >= 0.65, 30_000);
    const high = await submit(s, { name: "high", priority: 10, command: "true" });
    const [lowEnd, highEnd] = await Promise.all([waitForJobEnd(s, low), waitForJobEnd(s, high)]);
    expect(lowEnd.state).toBe("succeeded");
    expect(highEnd.state).toBe("succeeded");
    expect(lowEnd.tasks[0].attempts).toHaveLength(1);
    expect(lowEnd.tasks[0].attempts[0].outcome).toBe("succeeded");
    // The high job started only once the low one had ended.
    expect(Date.parse(highEnd.tasks[0].attempts[0].startedAt)).toBeGreaterThanOrEqual(
      Date.parse(lowEnd.tasks[0].attempts[0].endedAt!),
    );
  });
});

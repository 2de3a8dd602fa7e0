// Rescheduling with real processes (GrADS Rescheduler, GridWay's better-resource migration): a
// long checkpointing job on a speed-5 host moves to a speed-50 host that joins, and finishes far
// sooner than it would have where it was; a job without a checkpoint, and one with under 10 % of
// its estimated time left, stay where they are.

import { afterEach, expect, it } from "vitest";
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

const STEPS = 100;
/** Seconds a step takes on the slow host; ten times less on any other. */
const SLOW_STEP = 0.3;

/** A counter whose steps take SLOW_STEP on host `slow` and a tenth of that elsewhere. */
function counter(name: string, checkpointed: boolean) {
  const state = checkpointed ? '"$STEWARD_CHECKPOINT_DIR/count"' : '"$PWD/count"';
  return {
    name,
    command: [
      `state=${state}`,
      'i=$(cat "$state" 2>/dev/null || echo 0)',
      `step=${SLOW_STEP}; [ "$STEWARD_HOST" = slow ] || step=${SLOW_STEP / 10}`,
      `while [ "$i" -lt ${STEPS} ]; do`,
      '  sleep "$step"',
      "  i=$((i + 1))",
      '  echo "$i" > "$state.tmp" && mv "$state.tmp" "$state"',
      `  echo "$i" | awk '{ print $1 / ${STEPS} }' > "$STEWARD_PROGRESS_FILE"`,
      "done",
    ].join("\n"),
    checkpoint: { intervalSeconds: 1, graceSeconds: 5 },
  };
}

/**
 * A job that reports 90 % at once and then works 6 s more: as the estimator sees it (90 % in about
 * a second), under 10 % of its time is left, so it is not moved.
 */
const NEARLY_DONE = {
  name: "nearly-done",
  command: [
    'echo 1 > "$STEWARD_CHECKPOINT_DIR/state"',
    "sleep 0.5",
    'echo 0.9 > "$STEWARD_PROGRESS_FILE"',
    "sleep 6",
    'echo 1 > "$STEWARD_PROGRESS_FILE"',
  ].join("\n"),
  checkpoint: { intervalSeconds: 1, graceSeconds: 5 },
};

let server: (StewardProcess & { joinToken: string }) | undefined;
const agents: AgentProcess[] = [];

afterEach(async () => {
  for (const agent of agents.splice(0)) {
    await agent.crash();
    cleanup(agent.work);
  }
  await server?.stop();
  if (server) cleanup(server.data);
});

async function submit(target: StewardProcess, spec: unknown): Promise<string> {
  return ((await api(target, "POST", "/api/v1/jobs", spec)) as { id: string }).id;
}

type WithProgress = JobJson & { tasks: { progress: { fraction: number } | null; checkpoint: unknown }[] };

it("a long job moves to a much faster host that joins; one without a checkpoint or nearly done stays", async () => {
  const s = await startServerProcess({
    heartbeatSeconds: 1,
    hostTimeoutSeconds: 5,
    args: ["--discovery-seconds", "1"],
  });
  server = s;
  agents.push(
    await startAgentProcess({
      name: "slow",
      slots: 3,
      servers: [s.url],
      joinToken: s.joinToken,
      args: ["--speed", "5"],
    }),
  );
  await waitFor("the slow host", async () => (await api(s, "GET", "/api/v1/hosts")).length === 1);

  const submittedAt = Date.now();
  const long = await submit(s, counter("long", true));
  const noCheckpoint = await submit(s, counter("no-checkpoint", false));
  const nearlyDone = await submit(s, NEARLY_DONE);
  await waitFor(
    "progress and checkpoints on the slow host",
    async () => {
      const jobs = (await Promise.all([long, nearlyDone].map((id) => getJob(s, id)))) as WithProgress[];
      const noCkpt = (await getJob(s, noCheckpoint)) as WithProgress;
      return (
        jobs.every((job) => job.tasks[0].checkpoint && (job.tasks[0].progress?.fraction ?? 0) > 0) &&
        (jobs[1].tasks[0].progress?.fraction ?? 0) >= 0.9 &&
        (noCkpt.tasks[0].progress?.fraction ?? 0) > 0
      );
    },
    30_000,
  );

  // Speeds are set by hand (--speed): 50 against 5 promises a gain of about 0.9.
  agents.push(
    await startAgentProcess({
      name: "fast",
      slots: 3,
      servers: [s.url],
      joinToken: s.joinToken,
      args: ["--speed", "50"],
    }),
  );
  const moved = await waitFor(
    "the long job to run on the fast host",
    async () => {
      const job = await getJob(s, long);
      return job.tasks[0].attempts.some((attempt) => attempt.host === "fast" && attempt.state === "running")
        ? job
        : null;
    },
    20_000,
    100,
  );
  expect(moved.tasks[0].attempts[0]).toMatchObject({ host: "slow", outcome: "migrated" });
  expect(moved.tasks[0].attempts[0].reason).toMatch(/^rescheduled to fast: estimated gain 0\.\d\d$/);
  const event = moved.events.find((each) => each.kind === "reschedule");
  expect(event?.message).toMatch(
    /migrated to fast: estimated gain 0\.\d\d \(remaining \d+ s here, \d+ s \+ \d+ s move there\)/,
  );

  const end = await waitForJobEnd(s, long, 60_000);
  expect(end.state).toBe("succeeded");
  const tookSeconds = (Date.parse(end.tasks[0].attempts.at(-1)!.endedAt!) - submittedAt) / 1000;
  // Where it was, 100 steps of 0.3 s would take 30 s.
  expect(tookSeconds).toBeLessThan(STEPS * SLOW_STEP * 0.75);

  // Several discovery periods later, the other two are still on the slow host, never stopped.
  await new Promise((resolve) => setTimeout(resolve, 3000));
  for (const id of [noCheckpoint, nearlyDone]) {
    const job = await getJob(s, id);
    expect(job.tasks[0].attempts.map((attempt) => attempt.host)).toStrictEqual(["slow"]);
    expect(
      job.tasks[0].attempts[0].outcome === null || job.tasks[0].attempts[0].outcome === "succeeded",
    ).toBe(true);
  }
  console.log(
    `rescheduling: the long job took ${tookSeconds.toFixed(1)} s (30 s without the move); ${event?.message}`,
  );
});

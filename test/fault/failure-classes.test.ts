// Guarantee 5: failures are told apart. Application failures use up retry.maxAttempts; a time
// limit ends an attempt timed_out; lost, preempted and migrated attempts do not count.

import { afterAll, beforeAll, expect, it } from "vitest";
import { api, cleanup, type StewardProcess, startUp, waitForJobEnd } from "../helpers/steward.ts";

let steward: StewardProcess;

async function logsOf(on: StewardProcess, id: string): Promise<string> {
  const response = await fetch(`${on.url}/api/v1/jobs/${id}/logs?task=0`, {
    headers: { authorization: `Bearer ${on.token}` },
  });
  return response.text();
}

beforeAll(async () => {
  steward = await startUp({ agents: 1, slots: 2 });
});

afterAll(async () => {
  await steward?.stop();
  cleanup(steward?.data);
});

it("a job failing until its 2nd attempt succeeds with 2 attempts under maxAttempts 3", async () => {
  const { id } = await api(steward, "POST", "/api/v1/jobs", {
    command: 'test "$STEWARD_ATTEMPT" -ge 2 || exit 4',
    retry: { maxAttempts: 3, backoffSeconds: 0.2 },
  });
  const job = await waitForJobEnd(steward, id, 30_000);
  expect(job.state).toBe("succeeded");
  expect(job.tasks[0].attempts.map((attempt) => [attempt.outcome, attempt.exitCode])).toEqual([
    ["failed", 4],
    ["succeeded", 0],
  ]);
});

it("a job always failing ends failed after 3 attempts, backing off between them", async () => {
  const { id } = await api(steward, "POST", "/api/v1/jobs", {
    command: "exit 2",
    retry: { maxAttempts: 3, backoffSeconds: 0.5 },
  });
  const job = await waitForJobEnd(steward, id, 30_000);
  expect(job.state).toBe("failed");
  const attempts = job.tasks[0].attempts;
  expect(attempts.map((attempt) => attempt.outcome)).toEqual(["failed", "failed", "failed"]);
  // Back-off: 0.5 s then 1 s (doubling), each within ±20 % jitter.
  const gap = (a: number) => Date.parse(attempts[a + 1].startedAt) - Date.parse(attempts[a].endedAt!);
  expect(gap(0)).toBeGreaterThanOrEqual(400);
  expect(gap(1)).toBeGreaterThanOrEqual(800);
  expect(job.events.some((event) => event.message.includes("3 of 3 attempts used"))).toBe(true);
});

it("timeLimitSeconds kills the attempt's process group and ends it timed_out", async () => {
  // The shell leading the group outlives its SIGTERM (a trap) and waits for its child, a sleep in
  // its group: only a signal to the whole group ends the sleep, and so the job, before the grace
  // period's SIGKILL (20 s); a signal to the leader alone would leave it waiting for that.
  const { id } = await api(steward, "POST", "/api/v1/jobs", {
    command:
      'trap "echo leader got TERM" TERM; sleep 60 & child=$!; wait $child; wait $child; echo "child ended $?"',
    timeLimitSeconds: 1,
    checkpoint: { intervalSeconds: 60, graceSeconds: 20 },
  });
  const job = await waitForJobEnd(steward, id, 40_000);
  expect(job.state).toBe("failed");
  expect(job.tasks[0].attempts[0]).toMatchObject({ outcome: "timed_out" });
  const took = Date.parse(job.tasks[0].attempts[0].endedAt!) - Date.parse(job.tasks[0].attempts[0].startedAt);
  expect(took).toBeLessThan(8000);
  expect(await logsOf(steward, id)).toBe("leader got TERM\nchild ended 143\n");
});

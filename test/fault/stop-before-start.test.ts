// A stop that reaches the agent before the job's shell has made the job's process group (while
// the attempt is being prepared, or in the moment between the supervisor's fork and `setsid`, the
// last step of job.sh) still stops the job at once: it does not wait out the grace period for the
// SIGKILL. Real processes: `steward up` with one agent of 4 slots; each job is cancelled by a
// request sent as soon as its submit is answered, which reaches the agent right behind the start.

import { afterAll, beforeAll, expect, it } from "vitest";
import { api, getJob, type StewardProcess, startUp, waitFor } from "../helpers/steward.ts";

let steward: StewardProcess;

beforeAll(async () => {
  steward = await startUp({ agents: 1, slots: 4 });
}, 30_000);

afterAll(async () => {
  await steward?.stop();
});

/** The grace period of the jobs: a stop that missed the job would end it only after this. */
const GRACE_SECONDS = 60;

it("jobs cancelled as they start end within seconds, not after their grace period", async () => {
  const ids: string[] = [];
  for (let round = 0; round < 6; round++) {
    const { id } = (await api(steward, "POST", "/api/v1/jobs", {
      command: "sleep 300",
      array: { count: 2 },
      checkpoint: { graceSeconds: GRACE_SECONDS },
    })) as { id: string };
    // Whole job on even rounds, its tasks by index on odd ones.
    await api(steward, "POST", `/api/v1/jobs/${id}/cancel`, round % 2 === 0 ? {} : { tasks: "0,1" });
    ids.push(id);
  }
  const started = performance.now();
  for (const id of ids) {
    const job = await waitFor(
      `job ${id} cancelled`,
      async () => {
        const each = await getJob(steward, id);
        return each.state === "cancelled" ? each : null;
      },
      15_000,
    );
    expect(job.tasks.map((task) => task.state)).toEqual(["cancelled", "cancelled"]);
  }
  expect(performance.now() - started).toBeLessThan(15_000);
}, 60_000);

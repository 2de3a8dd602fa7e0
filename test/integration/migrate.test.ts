// `steward migrate` on a one-agent `steward up`: with no other host to go to, the migration is
// refused up front (exit 1, saying why), the job runs on untouched, and explain gives the
// scheduler's own reasons; the host it runs on named with --to is said to be where it runs.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, cleanup, cli, getJob, type StewardProcess, startUp, waitFor } from "../helpers/steward.ts";

let steward: StewardProcess;

beforeAll(async () => {
  steward = await startUp({ agents: 1, slots: 2 });
});

afterAll(async () => {
  await steward?.stop();
  cleanup(steward?.data);
});

describe("steward migrate on one host", () => {
  it("is refused up front with exit 1, and the job runs on", async () => {
    const { id } = await api(steward, "POST", "/api/v1/jobs", { command: "sleep 120" });
    await waitFor(`job ${id} running`, async () => (await getJob(steward, id)).tasks[0].state === "running");

    const refused = await cli(steward, ["migrate", id]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe(
      `steward: job ${id}: not migrated: no other host matches and has room (local-1 is the only host); use hold and release to restart it on local-1\n`,
    );
    const here = await cli(steward, ["migrate", id, "--to", "local-1"]);
    expect(here.code).toBe(1);
    expect(here.stderr).toBe(`steward: job ${id} runs on local-1 already: nothing to migrate\n`);

    // Nothing was stopped: the first attempt runs on, the job is not pending.
    await new Promise((done) => setTimeout(done, 1000));
    const job = await getJob(steward, id);
    expect(job.state).toBe("running");
    expect(job.tasks[0].attempts).toMatchObject([{ number: 1, state: "running" }]);
    const explained = await cli(steward, ["explain", id]);
    expect(explained.stdout).not.toContain("migrating");
    expect(explained.stdout).not.toContain("the free room goes to work ahead of it");
    await api(steward, "POST", `/api/v1/jobs/${id}/cancel`, {});
  });
});

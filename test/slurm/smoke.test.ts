// The test Slurm cluster runs a real batch job: the ground the Slurm pilots stand on. Without Slurm the
// file skips with a message, or fails under CI or STEWARD_SLURM=1 (`.ci/run` starts the cluster with
// scripts/slurm-local.sh and sets STEWARD_SLURM=1 when it is up).

import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import {
  NODE_UP_STATES,
  nodeStates,
  slurm,
  slurmTests,
  slurmUnavailable,
  waitForSlurmJobEnd,
} from "../helpers/slurm.ts";

const unavailable = await slurmUnavailable();
const folders: string[] = [];

afterAll(async () => {
  await Promise.all(folders.map((folder) => rm(folder, { recursive: true, force: true })));
});

slurmTests("Slurm smoke test", unavailable, () => {
  it("reports the node up", async () => {
    const states = await nodeStates();
    expect(states.length).toBeGreaterThan(0);
    // sinfo marks a node that does not answer with a trailing `*` (e.g. `idle*`): not up.
    expect(
      states.some((state) => NODE_UP_STATES.includes(state)),
      `node states: ${states.join(", ")}`,
    ).toBe(true);
  });

  it("runs a batch job to completion and writes its output where asked", async () => {
    const folder = await mkdtemp(join(tmpdir(), "steward-slurm-"));
    folders.push(folder);
    const output = join(folder, "out.txt");
    const id = (
      await slurm("sbatch", [
        "--parsable",
        "--job-name=steward-smoke",
        `--chdir=${folder}`,
        `--output=${output}`,
        "--time=1",
        "--wrap",
        "echo steward-slurm-ok; pwd",
      ])
    )
      .trim()
      .split(";")[0];
    expect(id).toMatch(/^\d+$/);

    const job = await waitForSlurmJobEnd(id);
    expect(job.JobState, `job ${id}: ${JSON.stringify(job)}`).toBe("COMPLETED");
    expect(job.ExitCode).toBe("0:0");
    expect((await readFile(output, "utf8")).split("\n")).toEqual(["steward-slurm-ok", folder, ""]);
  });
});

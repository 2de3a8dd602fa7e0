// Toil 5.9's WDL runner on Steward's batch system: `python3 -m steward.toil_wdl` (python/steward/
// toil_wdl.py) against a real server and agent on the loopback, a one-task workflow and a scatter
// whose files a last task gathers, each Toil job a Steward job, the outputs checked in the output
// folder. Without Toil's WDL runner the test is skipped, or fails under CI.

import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  type AgentProcess,
  api,
  cleanup,
  ROOT,
  type StewardProcess,
  startAttachedAgent,
  startServerProcess,
  tempDir,
} from "../helpers/steward.ts";
import { describeToil } from "./describe-toil.ts";
import { runPython } from "./python.ts";

const WDL = join(ROOT, "test/python/wdl");

describeToil(
  "Toil's WDL runner on the Steward batch system",
  (python) => {
    let server: StewardProcess & { joinToken: string };
    let agent: AgentProcess;
    const work = tempDir("steward-toil-wdl-");

    beforeAll(async () => {
      server = await startServerProcess();
      agent = await startAttachedAgent(server, "w1", 4);
    });

    afterAll(async () => {
      await agent?.crash();
      await server?.stop();
      cleanup(work, agent?.work ?? "", server?.data ?? "");
    });

    /** Runs `python3 -m steward.toil_wdl` on a workflow to its end (exit 0); answers its output folder. */
    async function runWdl(name: string, workflow: string, inputs: Record<string, unknown>): Promise<string> {
      const inputsFile = join(work, `${name}.json`);
      writeFileSync(inputsFile, JSON.stringify(inputs));
      const out = join(work, `${name}-out`);
      const run = await runPython(
        [
          "-m",
          "steward.toil_wdl",
          join(WDL, workflow),
          inputsFile,
          "--jobStore",
          join(work, `${name}-jobstore`),
          "-o",
          out,
          "--batchSystem",
          "steward",
          "--stewardPollSeconds",
          "0.5",
          "--workDir",
          work,
          "--defaultMemory",
          "512Mi",
          "--defaultDisk",
          "64Mi",
        ],
        { STEWARD_URL: server.url, STEWARD_TOKEN: server.token },
        work,
        python,
      );
      expect(run.code, run.stderr).toBe(0);
      return out;
    }

    /** The Steward jobs Toil made, by their names (`toil-` and the WDL task's, `helloCls`). */
    async function toilJobs(): Promise<{ id: string; name: string; state: string }[]> {
      const jobs: { id: string; name: string; state: string }[] = await api(
        server,
        "GET",
        "/api/v1/jobs?all=1",
      );
      return jobs.filter((job) => job.name.startsWith("toil-"));
    }

    it("runs a task as a Steward job and writes its output file", async () => {
      const out = await runWdl("hello", "hello.wdl", { "hello_world.name": "steward" });
      expect(readFileSync(join(out, "greeting.txt"), "utf8")).toBe("hello steward\n");
      const jobs = await toilJobs();
      expect(jobs.filter((job) => job.name === "toil-helloCls")).toHaveLength(1);
      expect(jobs.every((job) => job.state === "succeeded")).toBe(true);
    }, 180_000);

    it("scatters a task, one Steward job per element, and gathers their files", async () => {
      const before = new Set((await toilJobs()).map((job) => job.id));
      const names = ["one", "two", "three"];
      const out = await runWdl("scatter", "scatter.wdl", { "scatter_gather.names": names });
      expect(readFileSync(join(out, "all.txt"), "utf8")).toBe(
        names.map((name) => `hello ${name}\n`).join(""),
      );
      const made = (await toilJobs()).filter((job) => !before.has(job.id));
      expect(made.filter((job) => job.name === "toil-helloCls")).toHaveLength(names.length);
      expect(made.filter((job) => job.name === "toil-gatherCls")).toHaveLength(1);
      expect(made.every((job) => job.state === "succeeded")).toBe(true);
    }, 180_000);
  },
  "toil.wdl.toilwdl",
);

// Toil's CWL runner on Steward's batch system (python/steward/toil_batch_system.py) against a real
// server and agent on the loopback: a tool, a scatter and a two-step workflow passing a file, each
// Toil job a Steward job, their outputs checked. Without Toil the test is skipped, or fails under CI.

import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it, test } from "vitest";
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
import { runPython } from "./python.ts";
import { toilPython } from "./toil-python.ts";

const CWL = join(ROOT, "test/python/cwl");

const found = toilPython();

function describeToil(name: string, body: (python: string) => void): void {
  if ("python" in found) describe(name, () => body(found.python));
  else if (process.env.CI)
    test(`${name}: Toil is installed`, () => {
      throw new Error(found.missing);
    });
  else test.skip(`${name}: ${found.missing}`, () => {});
}

describeToil("Toil's CWL runner on the Steward batch system", (python) => {
  let server: StewardProcess & { joinToken: string };
  let agent: AgentProcess;
  const work = tempDir("steward-toil-");

  beforeAll(async () => {
    server = await startServerProcess();
    agent = await startAttachedAgent(server, "t1", 4);
  });

  afterAll(async () => {
    await agent?.crash();
    await server?.stop();
    cleanup(work, agent?.work ?? "", server?.data ?? "");
  });

  /** Runs `python3 -m steward.toil_cwl` on a workflow; answers its CWL outputs (stdout's JSON). */
  async function runCwl(name: string, workflow: string, inputs: Record<string, unknown>) {
    const inputsFile = join(work, `${name}.json`);
    writeFileSync(inputsFile, JSON.stringify(inputs));
    const run = await runPython(
      [
        "-m",
        "steward.toil_cwl",
        "--batchSystem",
        "steward",
        "--stewardPollSeconds",
        "0.5",
        "--jobStore",
        join(work, `${name}-jobstore`),
        "--workDir",
        work,
        "--outdir",
        join(work, `${name}-out`),
        "--defaultMemory",
        "512Mi",
        "--defaultDisk",
        "64Mi",
        "--logInfo",
        join(CWL, workflow),
        inputsFile,
      ],
      { STEWARD_URL: server.url, STEWARD_TOKEN: server.token },
      work,
      python,
    );
    expect(run.code, run.stderr).toBe(0);
    return JSON.parse(run.stdout) as Record<string, unknown>;
  }

  /** A CWL File output's text (Toil names it by its location, a file: URL). */
  function textOf(file: unknown): string {
    const { path, location } = file as { path?: string; location: string };
    return readFileSync(path ?? fileURLToPath(location), "utf8");
  }

  /** The Steward jobs Toil made, by their names. */
  async function toilJobs(): Promise<{ id: string; name: string; state: string }[]> {
    const jobs: { id: string; name: string; state: string }[] = await api(
      server,
      "GET",
      "/api/v1/jobs?all=1",
    );
    return jobs.filter((job) => job.name.startsWith("toil-"));
  }

  it("runs a tool as a Steward job and collects its output", async () => {
    const outputs = await runCwl("hello", "hello.cwl", { message: "hello" });
    expect(textOf(outputs.greeting)).toBe("hello\n");
    const jobs = await toilJobs();
    expect(jobs.length).toBeGreaterThanOrEqual(1);
    expect(jobs.every((job) => job.state === "succeeded")).toBe(true);
  }, 180_000);

  it("scatters over an array, one Steward job per element", async () => {
    const before = (await toilJobs()).length;
    const messages = ["one", "two", "three"];
    const outputs = await runCwl("scatter", "scatter.cwl", { messages });
    expect((outputs.greetings as unknown[]).map(textOf)).toEqual(messages.map((m) => `${m}\n`));
    expect((await toilJobs()).length - before).toBeGreaterThanOrEqual(messages.length);
  }, 180_000);

  it("passes a file from one step to the next", async () => {
    const outputs = await runCwl("two-steps", "two-steps.cwl", { message: "pass_it_on" });
    expect(textOf(outputs.shouted)).toBe("PASS_IT_ON\n");
  }, 180_000);
});

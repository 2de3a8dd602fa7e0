// Toil's CWL runner on Steward's batch system (python/steward/toil_batch_system.py) against a real
// server and two agents on the loopback: a tool, a scatter and a two-step workflow passing a file,
// each Toil job a Steward job, their outputs checked; a host lost under a running tool is invisible
// to Toil (Steward runs the job again on the other host). Without Toil the test is skipped, or fails
// under CI.

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  type AgentProcess,
  api,
  cleanup,
  getJob,
  ROOT,
  type StewardProcess,
  startAttachedAgent,
  startServerProcess,
  tempDir,
  waitFor,
} from "../helpers/steward.ts";
import { describeToil } from "./describe-toil.ts";
import { startPython } from "./python.ts";

const CWL = join(ROOT, "test/python/cwl");

describeToil("Toil's CWL runner on the Steward batch system", (python) => {
  let server: StewardProcess & { joinToken: string };
  const agents: AgentProcess[] = [];
  const work = tempDir("steward-toil-");

  beforeAll(async () => {
    // The server's defaults: a heartbeat a second, a host silent for 3 s is lost.
    server = await startServerProcess();
    for (const name of ["t1", "t2"]) agents.push(await startAttachedAgent(server, name, 4));
  });

  afterAll(async () => {
    for (const agent of agents) await agent.crash();
    await server?.stop();
    cleanup(work, ...agents.map((agent) => agent.work), server?.data ?? "");
  });

  /** Starts `python3 -m steward.toil_cwl` on a workflow, `extra` before the workflow's file. */
  function startCwl(name: string, workflow: string, inputs: Record<string, unknown>, extra: string[] = []) {
    const inputsFile = join(work, `${name}.json`);
    writeFileSync(inputsFile, JSON.stringify(inputs));
    return startPython(
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
        ...extra,
        join(CWL, workflow),
        inputsFile,
      ],
      { STEWARD_URL: server.url, STEWARD_TOKEN: server.token },
      work,
      python,
    );
  }

  /** Runs a workflow to its end (exit 0); answers its CWL outputs (stdout's JSON). */
  async function runCwl(name: string, workflow: string, inputs: Record<string, unknown>) {
    const run = await startCwl(name, workflow, inputs).done;
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

  it("a host lost under a running tool is invisible to Toil: the Steward job runs again on the other host", async () => {
    const marker = join(work, "sleeps-once.started");
    const before = (await toilJobs()).length;
    // --retryCount 0: a failure Toil saw would end the workflow.
    const run = startCwl("lost-host", "sleeps-once.cwl", { marker, message: "survived" }, [
      "--retryCount",
      "0",
    ]);
    const job = await Promise.race([
      waitFor(
        "the tool running",
        async () => {
          if (!existsSync(marker)) return null;
          const running = (await toilJobs()).filter((found) => found.state === "running");
          return running.length === 1 ? getJob(server, running[0].id) : null;
        },
        120_000,
        100,
      ),
      run.done.then((early) => {
        throw new Error(`Toil ended before its tool ran: ${early.stderr}`);
      }),
    ]);
    const victim = job.tasks[0].attempts[0].host;
    await agents.find((agent) => agent.name === victim)!.crash();
    const survivor = victim === "t1" ? "t2" : "t1";

    const ended = await run.done;
    expect(ended.code, ended.stderr).toBe(0);
    expect(textOf((JSON.parse(ended.stdout) as Record<string, unknown>).said)).toBe("survived\n");
    const again = await getJob(server, job.id);
    expect(again.state).toBe("succeeded");
    expect(again.tasks[0].attempts.map((attempt) => [attempt.host, attempt.outcome])).toEqual([
      [victim, "lost"],
      [survivor, "succeeded"],
    ]);
    // Toil issued the tool once: the loss never reached it as a failure.
    expect((await toilJobs()).length - before).toBe(1);
    expect(ended.stderr).not.toContain("Job failed with exit value");
  }, 180_000);
});

// The Snakemake profile (deploy/snakemake/steward) driving Debian's Snakemake 7 against a real server
// and two agents on loopback, whose shared file system is this machine's: a scatter/gather workflow
// runs to the end with the rules' threads, mem_mb and runtime as the jobs' cpus, memory and time
// limit; a failing rule stops the workflow and a rerun makes only what is missing; Ctrl-C cancels
// the jobs; a host lost while a rule runs is invisible to Snakemake (Steward reruns the rule on the
// other host). Snakemake checks its jobs every 10 s, every second when CI=true: the runs here set
// it, to keep each run to seconds. Without snakemake the test is skipped, and fails under CI.

import { type ChildProcess, execFileSync, spawn } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, test } from "vitest";
import {
  type AgentProcess,
  api,
  cleanup,
  getJob,
  type JobJson,
  ROOT,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
} from "../helpers/steward.ts";

const PROFILE = join(ROOT, "deploy/snakemake/steward");

function snakemakeMissing(): string | null {
  try {
    execFileSync("snakemake", ["--version"], { stdio: "ignore" });
    return null;
  } catch {
    return "snakemake is not installed (Debian's snakemake package)";
  }
}

const missing = snakemakeMissing();
let server: (StewardProcess & { joinToken: string }) | undefined;
const agents: AgentProcess[] = [];
const folders: string[] = [];
const running: ChildProcess[] = [];

interface SnakemakeRun {
  child: ChildProcess;
  output: () => string;
  exited: Promise<number | null>;
}

/** `snakemake --profile deploy/snakemake/steward` in `dir`, the steward of this checkout on its PATH. */
function snakemake(dir: string, args: string[] = []): SnakemakeRun {
  const s = server!;
  const child = spawn("snakemake", ["--profile", PROFILE, "--latency-wait", "5", ...args], {
    cwd: dir,
    stdio: ["ignore", "pipe", "pipe"],
    env: {
      ...process.env,
      PATH: `${join(ROOT, "bin")}:${process.env.PATH}`,
      STEWARD_URL: s.url,
      STEWARD_TOKEN: s.token,
      CI: "true",
    },
  });
  running.push(child);
  let text = "";
  child.stdout?.on("data", (chunk) => (text += chunk));
  child.stderr?.on("data", (chunk) => (text += chunk));
  const exited = new Promise<number | null>((done) => child.on("exit", (code) => done(code)));
  return { child, output: () => text, exited };
}

/** A workflow folder holding this Snakefile. */
function workflow(snakefile: string): string {
  const dir = tempDir("steward-snakemake-");
  folders.push(dir);
  writeFileSync(join(dir, "Snakefile"), snakefile);
  return dir;
}

async function jobs(): Promise<JobJson[]> {
  const list = (await api(server!, "GET", "/api/v1/jobs?all=1")) as { id: string }[];
  return Promise.all(list.map((job) => getJob(server!, job.id)));
}

/** The jobs made since `before` (their ids are above it), by name. */
async function jobsSince(before: number): Promise<JobJson[]> {
  return (await jobs()).filter((job) => Number(job.id) > before);
}

async function lastJobId(): Promise<number> {
  return Math.max(0, ...(await jobs()).map((job) => Number(job.id)));
}

/** Scatter (one part per sample), a rule per part, gather: the inputs of the tests below. */
const SCATTER_GATHER = `
SAMPLES = ["a", "b", "c"]

rule all:
    input: "total.txt"

rule scatter:
    output: "parts/{s}.txt"
    shell: "echo {wildcards.s} > {output}"

rule square:
    input: "parts/{s}.txt"
    output: "squared/{s}.txt"
    threads: 2
    resources: mem_mb=400, runtime=3
    shell: "test -e broken-{wildcards.s} && exit 7; tr a-z A-Z < {input} > {output}"

rule gather:
    input: expand("squared/{s}.txt", s=SAMPLES)
    output: "total.txt"
    shell: "cat {input} > {output}"
`;

afterAll(async () => {
  for (const child of running) if (child.exitCode === null) child.kill("SIGKILL");
  for (const agent of agents) await agent.crash();
  await server?.stop();
  cleanup(...folders, ...agents.map((agent) => agent.work), server?.data ?? "");
});

if (missing && process.env.CI) {
  test("snakemake is installed", () => {
    throw new Error(missing);
  });
} else if (missing) {
  test.skip(`Snakemake profile: ${missing}`, () => {});
} else {
  describe("the Snakemake profile", () => {
    beforeAll(async () => {
      server = await startServerProcess({ heartbeatSeconds: 1, hostTimeoutSeconds: 3 });
      const s = server;
      for (const name of ["h1", "h2"])
        agents.push(await startAgentProcess({ name, slots: 4, servers: [s.url], joinToken: s.joinToken }));
      await waitFor("2 hosts", async () => (await api(s, "GET", "/api/v1/hosts")).length === 2);
    });

    it("runs a scatter/gather workflow to the end, threads, mem_mb and runtime as cpus, memory and time limit", async () => {
      const dir = workflow(SCATTER_GATHER);
      const before = await lastJobId();
      const run = snakemake(dir);
      expect(await run.exited, run.output()).toBe(0);
      expect(readFileSync(join(dir, "total.txt"), "utf8")).toBe("A\nB\nC\n");
      const made = await jobsSince(before);
      expect(made.map((job) => job.name).sort()).toEqual([
        "gather",
        "scatter-a",
        "scatter-b",
        "scatter-c",
        "square-a",
        "square-b",
        "square-c",
      ]);
      expect(made.every((job) => job.state === "succeeded")).toBe(true);
      const square = made.find((job) => job.name === "square-b")!;
      expect(square.spec.resources).toMatchObject({ cpus: 2, memoryMb: 400 });
      expect(square.spec.timeLimitSeconds).toBe(180);
      // The job runs the job script Snakemake wrote, which changes to the workflow's folder itself.
      expect(square.spec.command[0]).toBe("sh");
      expect(square.spec.command[1]).toMatch(
        new RegExp(`^${dir}/\\.snakemake/tmp\\.[^/]+/snakejob\\.square\\.`),
      );
      // No retries from Steward: a rule's failure is Snakemake's to retry.
      expect(square.spec.retry.maxAttempts).toBe(1);
    }, 180_000);

    it("a failing rule stops the workflow; the rerun, once fixed, makes only what is missing", async () => {
      const dir = workflow(SCATTER_GATHER);
      writeFileSync(join(dir, "broken-b"), "");
      const first = snakemake(dir);
      expect(await first.exited).not.toBe(0);
      expect(first.output()).toContain("Error in rule square");
      expect(existsSync(join(dir, "total.txt"))).toBe(false);
      expect(existsSync(join(dir, "squared/b.txt"))).toBe(false);
      const madeFirst = ["a", "b", "c"].filter((s) => existsSync(join(dir, `squared/${s}.txt`)));

      cleanup(join(dir, "broken-b"));
      const before = await lastJobId();
      const rerun = snakemake(dir);
      expect(await rerun.exited, rerun.output()).toBe(0);
      expect(readFileSync(join(dir, "total.txt"), "utf8")).toBe("A\nB\nC\n");
      const names = (await jobsSince(before)).map((job) => job.name).sort();
      const missingSquares = ["a", "b", "c"].filter((s) => !madeFirst.includes(s)).map((s) => `square-${s}`);
      expect(names).toEqual(["gather", ...missingSquares].sort());
      expect(names).toContain("square-b");
    }, 180_000);

    it("Ctrl-C (SIGINT) to snakemake cancels its Steward jobs", async () => {
      const dir = workflow(`
rule all:
    input: expand("slept/{s}.txt", s=["a", "b", "c"])

rule sleep:
    output: "slept/{s}.txt"
    shell: "sleep 300; touch {output}"
`);
      const before = await lastJobId();
      const run = snakemake(dir);
      const made = await waitFor(
        "3 running sleep jobs",
        async () => {
          const list = await jobsSince(before);
          return list.length === 3 && list.every((job) => job.state === "running") ? list : null;
        },
        60_000,
        250,
      );
      run.child.kill("SIGINT");
      expect(await run.exited).not.toBe(0);
      for (const job of made)
        await waitFor(
          `job ${job.id} cancelled`,
          async () => (await getJob(server!, job.id)).state === "cancelled",
        );
    }, 180_000);

    it("a host lost while a rule runs is invisible to Snakemake: the rule reruns on the other host", async () => {
      const dir = workflow(`
rule all:
    input: "where.txt"

rule slow:
    output: "where.txt"
    shell: "sleep 4; echo $STEWARD_HOST > {output}"
`);
      const before = await lastJobId();
      const run = snakemake(dir);
      const job = await waitFor(
        "the rule running",
        async () => {
          const [found] = await jobsSince(before);
          return found?.state === "running" && found.tasks[0].attempts[0]?.state === "running" ? found : null;
        },
        60_000,
        100,
      );
      const victim = job.tasks[0].attempts[0].host;
      await agents.find((agent) => agent.name === victim)!.crash();
      expect(await run.exited, run.output()).toBe(0);
      const survivor = victim === "h1" ? "h2" : "h1";
      expect(readFileSync(join(dir, "where.txt"), "utf8")).toBe(`${survivor}\n`);
      const ended = await getJob(server!, job.id);
      expect(ended.state).toBe("succeeded");
      expect(ended.tasks[0].attempts.map((attempt) => [attempt.host, attempt.outcome])).toEqual([
        [victim, "lost"],
        [survivor, "succeeded"],
      ]);
      expect(run.output()).not.toContain("Error in rule");
    }, 180_000);
  });
}

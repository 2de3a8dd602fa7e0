// `steward run -- CMD`: a job from the command line, with its output streamed and its exit code
// returned; Ctrl-C cancels it. And `steward submit --dry-run`: the job file checked and explained
// against the hosts now, no job made. Real server and agents on loopback.

import { spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  api,
  type CliResult,
  cleanup,
  cli,
  type JobJson,
  STEWARD,
  type StewardProcess,
  startUp,
  tempDir,
  waitFor,
} from "../helpers/steward.ts";

let steward: StewardProcess;
let work: string;

beforeAll(async () => {
  steward = await startUp({ agents: 2, slots: 2 });
  work = tempDir("steward-run-");
});

afterAll(async () => {
  await steward?.stop();
  cleanup(steward?.data, work);
});

const run = (args: string[]) => cli(steward, ["run", ...args], { cwd: work });

async function jobIds(): Promise<string[]> {
  const jobs = (await api(steward, "GET", "/api/v1/jobs?all=1")) as { id: string }[];
  return jobs.map((job) => job.id);
}

/** `steward ARGS` in the work folder with `input` on its standard input. */
function withStdin(args: string[], input: string): Promise<CliResult> {
  return new Promise((done, fail) => {
    const child = spawn(STEWARD, args, {
      cwd: work,
      env: { ...process.env, STEWARD_URL: steward.url, STEWARD_TOKEN: steward.token },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.on("error", fail);
    child.on("close", (code) => done({ code: code ?? 1, stdout, stderr }));
    child.stdin.end(input);
  });
}

describe("steward run", () => {
  it("streams the command's output and exits with its exit code", async () => {
    const result = await run(["--", "sh", "-c", "echo hi; echo oops >&2; exit 3"]);
    expect(result.code, result.stderr).toBe(3);
    expect(result.stdout).toBe("hi\n");
    expect(result.stderr).toContain("oops\n");
  });

  it("runs an argv without a shell, and exits 0 when the job succeeds", async () => {
    const result = await run(["--name", "echoed", "--", "echo", "$HOME", "a  b"]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe("$HOME a  b\n");
  });

  it("streams every task of an array, each line prefixed by its task index", async () => {
    const result = await run(["--array", "4", "--", "sh", "-c", "echo $STEWARD_TASK_INDEX"]);
    expect(result.code, result.stderr).toBe(0);
    const lines = result.stdout.trimEnd().split("\n").sort();
    expect(lines).toEqual(["0: 0", "1: 1", "2: 2", "3: 3"]);
  });

  it("exits with the code of an array's first task that did not succeed", async () => {
    const result = await run([
      "--array",
      "3",
      "--",
      "sh",
      "-c",
      "exit $(( STEWARD_TASK_INDEX == 0 ? 0 : 5 + STEWARD_TASK_INDEX ))",
    ]);
    expect(result.code, result.stderr).toBe(6);
  });

  it("makes the job its options name, uploads --input and writes --output back here", async () => {
    writeFileSync(join(work, "numbers.txt"), "3\n1\n2\n");
    const result = await run([
      "--cpus",
      "2",
      "--memory-mb",
      "10",
      "--priority",
      "-3",
      "--retry",
      "2",
      "--time-limit",
      "60",
      "--checkpoint-interval",
      "30",
      "--requirements",
      "host.cpus >= 1",
      "--env",
      "GREETING=hello there",
      "--input",
      "numbers.txt",
      "--output",
      "sorted.txt",
      "--",
      "sh",
      "-c",
      'sort numbers.txt > sorted.txt; echo "$GREETING"',
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe("hello there\n");
    expect(result.stderr).toContain("1 file, 6 bytes written under");
    expect(readFileSync(join(work, "sorted.txt"), "utf8")).toBe("1\n2\n3\n");
    const ids = await jobIds();
    const job = (await api(steward, "GET", `/api/v1/jobs/${ids[ids.length - 1]}`)) as JobJson;
    expect(job.spec).toMatchObject({
      resources: { cpus: 2, memoryMb: 10 },
      priority: -3,
      retry: { maxAttempts: 2 },
      timeLimitSeconds: 60,
      checkpoint: { intervalSeconds: 30 },
      requirements: "host.cpus >= 1",
      env: { GREETING: "hello there" },
      inputs: ["numbers.txt"],
      outputs: ["sorted.txt"],
    });
  });

  it("streams a retried task's attempts and exits with its last code", async () => {
    // The first attempt fails (exit 4), the second succeeds: a marker file on the host tells them apart.
    const marker = join(work, `marker-${Date.now()}`);
    const result = await run([
      "--retry",
      "2",
      "--",
      "sh",
      "-c",
      `if [ -e ${marker} ]; then echo second; else touch ${marker}; echo first; exit 4; fi`,
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe("first\nsecond\n");
  }, 30_000);

  it("--detach prints the job id and exits 0", async () => {
    const result = await run(["--detach", "--", "sh", "-c", "exit 7"]);
    expect(result.code, result.stderr).toBe(0);
    const id = result.stdout.trim();
    expect(id).toMatch(/^\d+$/);
    expect(await jobIds()).toContain(id);
  });

  it("refuses an invalid job naming the flag (exit 2), and a missing input", async () => {
    const before = await jobIds();
    const cpus = await run(["--cpus", "0", "--", "true"]);
    expect(cpus.code).toBe(2);
    expect(cpus.stderr).toContain("--cpus: ");
    const input = await run(["--input", "absent.txt", "--", "true"]);
    expect(input.code).toBe(2);
    expect(input.stderr).toContain("--input: absent.txt: no such file in");
    const requirements = await run(["--requirements", "host.nosuchfact > 1", "--", "true"]);
    expect(requirements.code).toBe(2);
    expect(requirements.stderr).toContain("--requirements: ");
    expect(await jobIds()).toEqual(before);
  });

  it("Ctrl-C cancels the job and exits 130", async () => {
    const child = spawn(STEWARD, ["run", "--", "sh", "-c", "echo started; sleep 60"], {
      cwd: work,
      env: { ...process.env, STEWARD_URL: steward.url, STEWARD_TOKEN: steward.token },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    const exited = new Promise<number | null>((done) => child.on("close", (code) => done(code)));
    await waitFor("the job's first line", () => stdout.includes("started"));
    const ids = await jobIds();
    const id = ids[ids.length - 1];
    child.kill("SIGINT");
    expect(await exited, stderr).toBe(130);
    expect(stderr).toContain(`cancelling job ${id}`);
    await waitFor(`job ${id} cancelled`, async () => {
      const job = (await api(steward, "GET", `/api/v1/jobs/${id}`)) as JobJson;
      return job.state === "cancelled";
    });
  }, 30_000);
});

describe("steward submit --dry-run", () => {
  it("prints explain's lines for a valid job file and makes no job", async () => {
    const before = await jobIds();
    writeFileSync(
      join(work, "job.yaml"),
      'command: hostname\nrequirements: host.cpus >= 1 && host.name == "local-2"\n',
    );
    const result = await cli(steward, ["submit", "--dry-run", "job.yaml"], { cwd: work });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("job.yaml is valid (1 task); submitted now, the job would be pending");
    expect(result.stdout).toContain("1 host matches the requirements");
    expect(result.stdout).toMatch(/local-1 +no +requirements: host.name == "local-2" is false/);
    expect(result.stdout).toMatch(/local-2 +yes/);
    expect(result.stdout).toContain("the next pass starts task 0 on local-2");
    expect(await jobIds()).toEqual(before);
    const ps = await cli(steward, ["ps"]);
    expect(ps.stdout).not.toContain("hostname");
  });

  it("says when no host matches now, the failing clause counted, and still exits 0 (from standard input too)", async () => {
    const before = await jobIds();
    const result = await withStdin(
      ["submit", "--dry-run", "-"],
      "command: hostname\nrequirements: host.cpus >= 1 && host.memFreeMb > 1e12\n",
    );
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("standard input is valid");
    expect(result.stdout).toContain("0 hosts match the requirements");
    expect(result.stdout).toMatch(/\n +2 +host\.cpus >= 1\n/);
    expect(result.stdout).toMatch(/\n +0 +host\.memFreeMb > 1e12\n/);
    expect(result.stdout).toContain("no host matches it now");
    expect(await jobIds()).toEqual(before);
  });

  it("refuses an invalid job file with submit's message (exit 2)", async () => {
    writeFileSync(join(work, "bad.yaml"), "command: hostname\ncolour: red\n");
    const dry = await cli(steward, ["submit", "--dry-run", "bad.yaml"], { cwd: work });
    const real = await cli(steward, ["submit", "bad.yaml"], { cwd: work });
    expect(dry.code).toBe(2);
    expect(real.code).toBe(2);
    expect(dry.stderr).toContain("bad.yaml: line 2, column 1: colour: unknown key");
    expect(dry.stderr).toBe(real.stderr);
    const dependency = await withStdin(
      ["submit", "--dry-run", "-"],
      "command: hostname\ndependsOn: ['999999']\n",
    );
    expect(dependency.code).toBe(2);
    expect(dependency.stderr).toContain("standard input: line 2, column 13: dependsOn[0]: no job 999999");
  });

  it("answers the explanation in JSON, with a dry run's id", async () => {
    const result = await cli(steward, ["submit", "--dry-run", "--json", "job.yaml"], { cwd: work });
    expect(result.code, result.stderr).toBe(0);
    const answer = JSON.parse(result.stdout) as {
      spec: { command: string };
      explanation: { id: string; summary: { matching: number } };
    };
    expect(answer.spec.command).toBe("hostname");
    expect(answer.explanation.id).toBe("dry-run");
    expect(answer.explanation.summary.matching).toBe(1);
  });
});

describe("steward submit -", () => {
  it("makes the job from standard input", async () => {
    const result = await withStdin(["submit", "-", "--wait"], "command: [echo, piped]\nname: from-stdin\n");
    expect(result.code, result.stderr).toBe(0);
    const id = result.stdout.split("\n")[0].trim();
    const job = (await api(steward, "GET", `/api/v1/jobs/${id}`)) as JobJson;
    expect(job.name).toBe("from-stdin");
    expect(job.state).toBe("succeeded");
  });
});

// The commands a workflow engine (Snakemake's --cluster, --cluster-status, --cluster-cancel) or a
// polling script uses, against a real server and agent on loopback: `steward status` (one request
// for many ids, its exit codes for a missing job and for a server that cannot be asked, the
// snakemake words), `steward cancel ID...` (one request, an ended job, a missing one, --quiet),
// `steward run --stdout/--stderr` and `--detach`, and `steward ps --format/--no-header`. The
// requests a command makes are counted by a proxy in front of the server.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type CountingProxy, countingProxy } from "../helpers/counting-proxy.ts";
import {
  api,
  cleanup,
  cli,
  freePort,
  getJob,
  type StewardProcess,
  startUp,
  tempDir,
  userToken,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

let steward: StewardProcess;
let proxy: CountingProxy;
const work = tempDir("steward-engine-cli-");
/** Jobs left running by a test, cancelled at the end. */
const started: string[] = [];

beforeAll(async () => {
  steward = await startUp({ agents: 1, slots: 4 });
  proxy = await countingProxy(steward.url);
}, 60_000);

afterAll(async () => {
  for (const id of started) await api(steward, "POST", `/api/v1/jobs/${id}/cancel`, {}).catch(() => {});
  await proxy?.close();
  await steward?.stop();
  cleanup(steward?.data, work);
});

/** The server seen through the counting proxy. */
const viaProxy = () => ({ url: proxy.url, token: steward.token });

/** The requests the proxy passed on while `work` ran. */
async function requestsOf<T>(run: () => Promise<T>): Promise<{ result: T; requests: string[] }> {
  const before = proxy.requests.length;
  const result = await run();
  return { result, requests: proxy.requests.slice(before) };
}

async function submit(body: object): Promise<string> {
  return ((await api(steward, "POST", "/api/v1/jobs", body)) as { id: string }).id;
}

/** A job that runs until cancelled. */
async function running(): Promise<string> {
  const id = await submit({ command: "sleep 300" });
  started.push(id);
  await waitFor(`job ${id} to run`, async () => (await getJob(steward, id)).state === "running");
  return id;
}

/** A job no host matches: it stays pending. */
async function pending(): Promise<string> {
  const id = await submit({ command: "true", requirements: 'host.name == "nowhere"' });
  started.push(id);
  return id;
}

async function succeeded(): Promise<string> {
  const id = await submit({ command: "true" });
  expect((await waitForJobEnd(steward, id)).state).toBe("succeeded");
  return id;
}

async function jobCount(): Promise<number> {
  return ((await api(steward, "GET", "/api/v1/jobs?all=1")) as unknown[]).length;
}

describe("steward status", () => {
  it("prints ID STATE for each job named, in order, all asked in one request", async () => {
    const [run, done, waiting] = [await running(), await succeeded(), await pending()];
    const { result, requests } = await requestsOf(() => cli(viaProxy(), ["status", run, done, waiting]));
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(`${run} running\n${done} succeeded\n${waiting} pending\n`);
    expect(requests).toEqual([`GET /api/v1/jobs/states?ids=${run}%2C${done}%2C${waiting}`]);
  }, 60_000);

  it("a job that does not exist: named on stderr, the others printed, exit 1", async () => {
    const done = await succeeded();
    const result = await cli(steward, ["status", "999999", done]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe(`${done} succeeded\n`);
    expect(result.stderr).toBe("steward: no job 999999\n");
  }, 60_000);

  it("another user's job is absent for a user's token", async () => {
    const mine = await pending();
    const alice = await userToken(steward, "alice");
    const result = await cli(alice, ["status", mine]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(`no job ${mine}`);
  });

  it("a workflow's id: the workflow's state, from its jobs'", async () => {
    const { workflow, jobs } = (await api(steward, "POST", "/api/v1/workflows", {
      jobs: { only: { command: "true" } },
    })) as { workflow: string; jobs: Record<string, string> };
    await waitForJobEnd(steward, jobs.only);
    const result = await cli(steward, ["status", workflow, "flow-99999"]);
    expect(result.code).toBe(1);
    expect(result.stdout).toBe(`${workflow} succeeded\n`);
    expect(result.stderr).toContain("no workflow flow-99999");
  }, 60_000);

  it("--format snakemake: success, failed or running, the word alone for one id; a missing job is failed, exit 0", async () => {
    const [run, done, waiting, cancelled] = [
      await running(),
      await succeeded(),
      await pending(),
      await pending(),
    ];
    await api(steward, "POST", `/api/v1/jobs/${cancelled}/cancel`, {});
    const held = await pending();
    await api(steward, "POST", `/api/v1/jobs/${held}/hold`, {});
    const word = async (id: string) => {
      const result = await cli(steward, ["status", "--format", "snakemake", id]);
      expect(result.code, result.stderr).toBe(0);
      return result.stdout;
    };
    expect(await word(run)).toBe("running\n");
    expect(await word(done)).toBe("success\n");
    expect(await word(waiting)).toBe("running\n");
    expect(await word(held)).toBe("running\n");
    expect(await word(cancelled)).toBe("failed\n");
    const missing = await cli(steward, ["status", "--format", "snakemake", "999999"]);
    expect(missing).toEqual({
      code: 0,
      stdout: "failed\n",
      stderr: "steward: no job 999999 (failed for Snakemake)\n",
    });
    const several = await cli(steward, ["status", "--format", "snakemake", done, run]);
    expect(several.stdout).toBe(`${done} success\n${run} running\n`);
  }, 60_000);

  it("a server that cannot be reached, or that refuses the token: exit 3, nothing on stdout", async () => {
    const closed = { url: `http://127.0.0.1:${await freePort()}`, token: steward.token };
    for (const format of ["state", "snakemake"]) {
      const unreachable = await cli(closed, ["status", "--format", format, "1"]);
      expect(unreachable.code).toBe(3);
      expect(unreachable.stdout).toBe("");
      expect(unreachable.stderr).toContain("cannot reach the Steward server");
      const refused = await cli({ url: steward.url, token: "wrong" }, ["status", "--format", format, "1"]);
      expect(refused.code).toBe(3);
      expect(refused.stdout).toBe("");
      expect(refused.stderr).toContain("the server refused the token");
    }
  }, 60_000);
});

describe("steward cancel ID...", () => {
  it("cancels several jobs in one request: one line each, an ended job as it is, a missing one named with exit 1", async () => {
    const [run, waiting, done] = [await running(), await pending(), await succeeded()];
    const { result, requests } = await requestsOf(() =>
      cli(viaProxy(), ["cancel", run, waiting, done, "999999"]),
    );
    expect(result.code).toBe(1);
    expect(result.stderr).toBe("steward: no job 999999\n");
    expect(result.stdout).toBe(`job ${run}: cancelled\njob ${waiting}: cancelled\njob ${done}: succeeded\n`);
    // One cancel for all; then the states of those still stopping, all at once.
    expect(requests.filter((line) => line.startsWith("POST"))).toEqual(["POST /api/v1/jobs/cancel"]);
    for (const line of requests.slice(1)) expect(line).toMatch(/^GET \/api\/v1\/jobs\/states\?ids=/);
    expect((await getJob(steward, run)).state).toBe("cancelled");
    expect((await getJob(steward, done)).state).toBe("succeeded");
  }, 60_000);

  it("--quiet: prints nothing and makes one request, exit 0 with a job that had ended", async () => {
    const [run, done] = [await running(), await succeeded()];
    const { result, requests } = await requestsOf(() => cli(viaProxy(), ["cancel", "--quiet", run, done]));
    expect(result).toEqual({ code: 0, stdout: "", stderr: "" });
    expect(requests).toEqual(["POST /api/v1/jobs/cancel"]);
    expect((await waitForJobEnd(steward, run)).state).toBe("cancelled");
    const one = await cli(steward, ["cancel", "--quiet", await pending()]);
    expect(one).toEqual({ code: 0, stdout: "", stderr: "" });
  }, 60_000);

  it("one id as before: its state once stopped; an ended job exit 0; a missing one named, exit 1", async () => {
    const run = await running();
    expect(await cli(steward, ["cancel", run])).toEqual({
      code: 0,
      stdout: `job ${run}: cancelled\n`,
      stderr: "",
    });
    expect((await cli(steward, ["cancel", run])).stdout).toBe(`job ${run}: cancelled\n`);
    const missing = await cli(steward, ["cancel", "999999"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toBe("steward: no job 999999\n");
  }, 60_000);

  it("a workflow among the ids: its block of lines, in the order given", async () => {
    const { workflow, jobs } = (await api(steward, "POST", "/api/v1/workflows", {
      jobs: { long: { command: "sleep 300" } },
    })) as { workflow: string; jobs: Record<string, string> };
    const waiting = await pending();
    const result = await cli(steward, ["cancel", waiting, workflow]);
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toBe(
      `job ${waiting}: cancelled\nworkflow ${workflow}: cancelled\njob ${jobs.long} (long): cancelled\n`,
    );
  }, 60_000);

  it("a user's token: another's job is named missing and left running", async () => {
    const theirs = await running();
    const alice = await userToken(steward, "alice-cancels");
    const own = (await api(alice, "POST", "/api/v1/jobs", { command: "sleep 300" })) as { id: string };
    started.push(own.id);
    const result = await cli(alice, ["cancel", own.id, theirs]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(`steward: no job ${theirs}\n`);
    expect((await getJob(steward, theirs)).state).toBe("running");
    expect((await waitForJobEnd(steward, own.id)).state).toBe("cancelled");
  }, 60_000);

  it("refuses --tasks with several ids and --quiet with --json (exit 2), cancelling nothing", async () => {
    const [a, b] = [await pending(), await pending()];
    const tasks = await cli(steward, ["cancel", "--tasks", "0", a, b]);
    expect(tasks.code).toBe(2);
    expect(tasks.stderr).toContain("--tasks names one job's tasks");
    const both = await cli(steward, ["cancel", "--quiet", "--json", a]);
    expect(both.code).toBe(2);
    expect((await getJob(steward, a)).state).toBe("pending");
  });
});

describe("steward run --stdout, --stderr and --detach", () => {
  it("writes the job's stdout and stderr to the files too, as they come to the terminal", async () => {
    const [out, err] = [join(work, "job.out"), join(work, "job.err")];
    const result = await cli(steward, [
      "run",
      "--stdout",
      out,
      "--stderr",
      err,
      "--",
      "sh",
      "-c",
      "echo out; echo err >&2; exit 3",
    ]);
    expect(result.code).toBe(3);
    expect(result.stdout).toBe("out\n");
    expect(readFileSync(out, "utf8")).toBe("out\n");
    expect(readFileSync(err, "utf8")).toBe("err\n");
  }, 60_000);

  it("an array's lines with their task prefix; one file for both streams", async () => {
    const both = join(work, "array.log");
    const result = await cli(steward, [
      "run",
      "--array",
      "2",
      "--stdout",
      both,
      "--stderr",
      both,
      "--",
      "sh",
      "-c",
      "echo out $STEWARD_TASK_INDEX; echo err $STEWARD_TASK_INDEX >&2",
    ]);
    expect(result.code, result.stderr).toBe(0);
    expect(readFileSync(both, "utf8").split("\n").filter(Boolean).sort()).toEqual([
      "0: err 0",
      "0: out 0",
      "1: err 1",
      "1: out 1",
    ]);
  }, 60_000);

  it("refuses --stdout with --detach, and a file that cannot be written, before any job is made (exit 2)", async () => {
    const before = await jobCount();
    const detached = await cli(steward, ["run", "--detach", "--stdout", join(work, "x"), "--", "true"]);
    expect(detached.code).toBe(2);
    expect(detached.stderr).toContain("--detach does not follow it");
    const nowhere = await cli(steward, ["run", "--stderr", join(work, "no", "such", "folder"), "--", "true"]);
    expect(nowhere.code).toBe(2);
    expect(nowhere.stderr).toContain("--stderr");
    expect(await jobCount()).toBe(before);
  });

  it("--detach prints the job id alone, as sbatch --parsable", async () => {
    const result = await cli(steward, ["run", "--detach", "--", "true"]);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^\d+\n$/);
    expect((await waitForJobEnd(steward, result.stdout.trim())).state).toBe("succeeded");
  }, 60_000);
});

describe("steward ps --format and --no-header", () => {
  it("the columns named, in order; without the header line for a script", async () => {
    const done = await succeeded();
    const withHeader = await cli(steward, ["ps", "--all", "--format", "id,state"]);
    expect(withHeader.code, withHeader.stderr).toBe(0);
    expect(withHeader.stdout).toMatch(/^ID +STATE\n/);
    expect(withHeader.stdout).toMatch(new RegExp(`^${done} +succeeded$`, "m"));
    const bare = await cli(steward, ["ps", "--all", "--format", "state,id", "--no-header"]);
    expect(bare.stdout).not.toContain("STATE");
    expect(bare.stdout).toMatch(new RegExp(`^succeeded +${done}$`, "m"));
    const lines = bare.stdout.split("\n").filter(Boolean);
    expect(lines.length).toBe(((await api(steward, "GET", "/api/v1/jobs?all=1")) as unknown[]).length);
  }, 60_000);

  it("no job listed: nothing at all with --no-header", async () => {
    const none = ["ps", "--all", "--name", "no-job-has-this-name"];
    expect((await cli(steward, none)).stdout).toBe("no jobs\n");
    expect(await cli(steward, [...none, "--no-header"])).toEqual({ code: 0, stdout: "", stderr: "" });
    expect((await cli(steward, [...none, "--format", "id,name"])).stdout).toBe("ID  NAME\n");
  });

  it("refuses an unknown column, naming the known ones, and --format with --json", async () => {
    const unknown = await cli(steward, ["ps", "--format", "id,nope"]);
    expect(unknown.code).not.toBe(0);
    expect(unknown.stderr).toContain("no column nope: columns are id, name, owner, state");
    const json = await cli(steward, ["ps", "--json", "--format", "id"]);
    expect(json.code).toBe(2);
  });
});

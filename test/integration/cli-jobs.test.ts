// The CLI's job commands against a real server and agent on loopback: `logs -f` across attempts,
// workflow ids wherever a job id goes (fetch, explain, update and ps --workflows too), hold/release/
// cancel answers, wait's outcome lines, show's tables and `ps --name`.

import { type ChildProcess, spawn } from "node:child_process";
import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  api,
  cleanup,
  cli,
  getJob,
  STEWARD,
  type StewardProcess,
  startUp,
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

let steward: StewardProcess;

beforeAll(async () => {
  steward = await startUp({ agents: 1, slots: 4 });
}, 60_000);

const folders: string[] = [];

afterAll(async () => {
  await steward?.stop();
  cleanup(steward?.data, ...folders);
});

async function submit(body: object): Promise<string> {
  return ((await api(steward, "POST", "/api/v1/jobs", body)) as { id: string }).id;
}

async function logOf(id: string, attempt: number): Promise<string> {
  const response = await fetch(`${steward.url}/api/v1/jobs/${id}/logs?attempt=${attempt}`, {
    headers: { authorization: `Bearer ${steward.token}` },
  });
  expect(response.status).toBe(200);
  return response.text();
}

/** A CLI process left running, its output gathered as it comes. */
function started(args: string[]): {
  child: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  exited: Promise<number>;
} {
  const child = spawn(STEWARD, args, {
    env: { ...process.env, STEWARD_URL: steward.url, STEWARD_TOKEN: steward.token },
  });
  let stdout = "";
  let stderr = "";
  child.stdout?.on("data", (chunk) => {
    stdout += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    stderr += chunk;
  });
  const exited = new Promise<number>((done) => child.on("close", (code) => done(code ?? 1)));
  return { child, stdout: () => stdout, stderr: () => stderr, exited };
}

const COUNTING = ["sh", "-c", "for i in $(seq 1 40); do echo step $i; sleep 0.05; done"];

describe("steward logs -f", () => {
  it("follows the task across a hold and release: every line of both attempts, the second from its start", async () => {
    const id = await submit({ name: "counting", command: COUNTING });
    await waitFor("attempt 1 to run", async () => (await getJob(steward, id)).state === "running");
    const follower = started(["logs", "-f", id]);
    try {
      await waitFor("a few lines", () => follower.stdout().includes("step 5\n"));
      expect((await cli(steward, ["hold", id])).code).toBe(0);
      await waitFor("attempt 1 to end", async () => {
        const job = await getJob(steward, id);
        return job.tasks[0].attempts[0]?.state === "ended";
      });
      expect((await cli(steward, ["release", id])).code).toBe(0);
      const job = await waitForJobEnd(steward, id);
      expect(job.state).toBe("succeeded");
      expect(await follower.exited).toBe(0);
      const attempts = job.tasks[0].attempts;
      expect(attempts.map((attempt) => attempt.number)).toEqual([1, 2]);
      const first = await logOf(id, 1);
      const second = await logOf(id, 2);
      expect(second).toBe(Array.from({ length: 40 }, (_, i) => `step ${i + 1}\n`).join(""));
      expect(follower.stdout()).toBe(first + second);
      expect(follower.stderr()).toBe(`--- attempt 2 on ${attempts[1].host} ---\n`);
    } finally {
      follower.child.kill();
    }
  }, 60_000);
});

async function submitWorkflow(
  jobs: Record<string, object>,
): Promise<{ workflow: string; jobs: Record<string, string> }> {
  return (await api(steward, "POST", "/api/v1/workflows", { jobs })) as {
    workflow: string;
    jobs: Record<string, string>;
  };
}

async function gone(id: string): Promise<boolean> {
  const response = await fetch(`${steward.url}/api/v1/jobs/${id}`, {
    headers: { authorization: `Bearer ${steward.token}` },
  });
  return response.status === 404;
}

describe("workflow ids wherever a job id goes", () => {
  it("wait, logs and rm take flow-N; rm of one of its jobs is refused naming the workflow", async () => {
    const { workflow, jobs } = await submitWorkflow({
      prep: { command: ["sh", "-c", "echo one; echo two"] },
      main: { command: ["sh", "-c", "echo three"], dependsOn: ["prep"] },
    });
    const waited = await cli(steward, ["wait", workflow]);
    expect(waited.code, waited.stderr).toBe(0);
    expect(waited.stdout).toBe("");
    expect(waited.stderr).toBe(`job ${jobs.prep} (prep): succeeded\njob ${jobs.main} (main): succeeded\n`);
    const logs = await cli(steward, ["logs", workflow]);
    expect(logs.code, logs.stderr).toBe(0);
    expect(logs.stdout).toBe("prep: one\nprep: two\nmain: three\n");
    const refused = await cli(steward, ["rm", jobs.main]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toBe(
      `steward: job ${jobs.main} is main of workflow ${workflow}: remove the whole workflow with steward rm ${workflow}\n`,
    );
    expect(await gone(jobs.main)).toBe(false);
    const removed = await cli(steward, ["rm", workflow]);
    expect(removed.code, removed.stderr).toBe(0);
    expect(removed.stdout).toBe(
      `workflow ${workflow} removed: prep (job ${jobs.prep}), main (job ${jobs.main})\n`,
    );
    expect(await gone(jobs.prep)).toBe(true);
    expect(await gone(jobs.main)).toBe(true);
  }, 60_000);

  it("cancel flow-N cancels every job not ended in one request; rm flow-N of a running one is refused, nothing removed", async () => {
    const { workflow, jobs } = await submitWorkflow({
      first: { command: "true" },
      long: { command: "sleep 60", dependsOn: ["first"] },
      after: { command: "true", dependsOn: ["long"] },
    });
    await waitFor("long to run", async () => (await getJob(steward, jobs.long)).state === "running");
    const refused = await cli(steward, ["rm", workflow]);
    expect(refused.code).toBe(3);
    expect(refused.stderr).toContain(`job ${jobs.long} (long) of workflow ${workflow} is running`);
    expect(await gone(jobs.first)).toBe(false);
    const cancelled = await cli(steward, ["cancel", workflow]);
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(cancelled.stdout).toBe(
      `workflow ${workflow}: cancelled\njob ${jobs.long} (long): cancelled\njob ${jobs.after} (after): cancelled\n`,
    );
    expect((await getJob(steward, jobs.first)).state).toBe("succeeded");
    const messages = (await getJob(steward, jobs.after)).events.map((event) => event.message);
    expect(messages).toContain("cancel requested by admin");
    const waited = await cli(steward, ["wait", workflow]);
    expect(waited.code).toBe(1);
    expect(waited.stderr).toContain(`job ${jobs.long} (long): cancelled\n`);
  }, 60_000);

  it("logs -f flow-N follows every job at once, each line by its job's name", async () => {
    const { workflow } = await submitWorkflow({
      a: { command: ["sh", "-c", "sleep 0.5; echo from-a"] },
      b: { command: ["sh", "-c", "echo from-b"], dependsOn: ["a"] },
    });
    const followed = await cli(steward, ["logs", "-f", workflow]);
    expect(followed.code, followed.stderr).toBe(0);
    expect(followed.stdout.split("\n").sort()).toEqual(["", "a: from-a", "b: from-b"]);
  }, 60_000);
});

describe("fetch, explain, update and ps --workflows take workflows", () => {
  it("fetch flow-N writes each succeeded job's outputs under DIR/<name>/ (an array's by task), the others skipped with a note", async () => {
    const { workflow, jobs } = await submitWorkflow({
      prep: { command: ["sh", "-c", "echo prepared > out.txt"], outputs: ["out.txt"] },
      sweep: {
        command: ["sh", "-c", 'echo "part $STEWARD_TASK_INDEX" > part.txt'],
        array: 2,
        outputs: ["part.txt"],
        dependsOn: ["prep"],
      },
      quiet: { command: "true" },
      broken: { command: "false", retry: { maxAttempts: 1 } },
    });
    await cli(steward, ["wait", workflow]);
    const to = tempDir("steward-fetch-flow-");
    folders.push(to);
    const fetched = await cli(steward, ["fetch", workflow, "--to", to]);
    expect(fetched.code, fetched.stderr).toBe(0);
    expect(readFileSync(join(to, "prep", "out.txt"), "utf8")).toBe("prepared\n");
    expect(readFileSync(join(to, "sweep", "0", "part.txt"), "utf8")).toBe("part 0\n");
    expect(readFileSync(join(to, "sweep", "1", "part.txt"), "utf8")).toBe("part 1\n");
    expect(readdirSync(to).sort()).toEqual(["prep", "sweep"]);
    expect(fetched.stderr).toBe(
      `skipped: job ${jobs.quiet} (quiet): no output files\n` +
        `skipped: job ${jobs.broken} (broken): failed\n` +
        `3 files, 23 bytes written under ${to} (from 2 jobs of ${workflow})\n`,
    );
    const json = await cli(steward, ["fetch", workflow, "--to", join(to, "again"), "--json"]);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual([
      {
        name: "prep",
        job: jobs.prep,
        task: 0,
        path: "out.txt",
        bytes: 9,
        file: join(to, "again", "prep", "out.txt"),
      },
      {
        name: "sweep",
        job: jobs.sweep,
        task: 0,
        path: "part.txt",
        bytes: 7,
        file: join(to, "again", "sweep", "0", "part.txt"),
      },
      {
        name: "sweep",
        job: jobs.sweep,
        task: 1,
        path: "part.txt",
        bytes: 7,
        file: join(to, "again", "sweep", "1", "part.txt"),
      },
    ]);
  }, 60_000);

  it("explain flow-N explains each job in the workflow's order; update flow-N changes those not started, naming the others", async () => {
    const { workflow, jobs } = await submitWorkflow({
      first: { command: "sleep 60" },
      second: { command: "true", dependsOn: ["first"] },
      third: { command: "true", array: 2, dependsOn: ["second"] },
    });
    await waitFor("first to run", async () => (await getJob(steward, jobs.first)).state === "running");
    const explained = await cli(steward, ["explain", workflow]);
    expect(explained.code, explained.stderr).toBe(0);
    const headlines = explained.stdout.split("\n").filter((line) => line.startsWith("job "));
    expect(headlines).toEqual([
      `job ${jobs.first} (first) is running`,
      `job ${jobs.second} (second) is waiting`,
      `job ${jobs.third} (third) is waiting`,
    ]);
    const json = JSON.parse((await cli(steward, ["explain", workflow, "--json"])).stdout) as {
      name: string;
      job: string;
      explanation: { id: string; state: string };
    }[];
    expect(json.map(({ name, job, explanation }) => [name, job, explanation.id, explanation.state])).toEqual([
      ["first", jobs.first, jobs.first, "running"],
      ["second", jobs.second, jobs.second, "waiting"],
      ["third", jobs.third, jobs.third, "waiting"],
    ]);

    const updated = await cli(steward, ["update", workflow, "--priority", "7"]);
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.stdout).toBe(
      `job ${jobs.second} (second, waiting): priority 7\njob ${jobs.third} (third, waiting): priority 7\n`,
    );
    expect(updated.stderr).toBe(
      `not updated: job ${jobs.first} (first): job ${jobs.first} is running: only a job that has not started can be updated (hold it first: its attempt stops, and resumes from its checkpoint on release)\n`,
    );
    expect((await getJob(steward, jobs.second)).priority).toBe(7);
    expect((await getJob(steward, jobs.third)).priority).toBe(7);
    expect((await getJob(steward, jobs.first)).priority).toBe(0);
    const parallel = await cli(steward, ["update", workflow, "--parallel", "1"]);
    expect(parallel.code).toBe(2);
    expect(parallel.stderr).toContain("--parallel is an array's own: give it to one job");

    expect((await cli(steward, ["cancel", workflow])).code).toBe(0);
    const none = await cli(steward, ["update", workflow, "--priority", "3"]);
    expect(none.code).toBe(1);
    expect(none.stdout).toBe("");
    expect(none.stderr).toContain(
      `not updated: job ${jobs.second} (second): job ${jobs.second} is cancelled`,
    );
    expect(none.stderr).toMatch(new RegExp(`steward: workflow ${workflow}: no job updated\\n$`));
  }, 60_000);

  it("ps --workflows lists the workflows not ended (--all: every one) with their state", async () => {
    const { workflow } = await submitWorkflow({
      long: { command: "sleep 60" },
      next: { command: "true", dependsOn: ["long"] },
    });
    const listed = await cli(steward, ["ps", "--workflows"]);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toMatch(
      new RegExp(`^ID +NAME +OWNER +STATE +JOBS +SUBMITTED\n${workflow} +- +\\S+ +(pending|running) +2 `),
    );
    const ids = (args: string[]) =>
      cli(steward, ["ps", "--workflows", "--json", ...args]).then((result) =>
        (JSON.parse(result.stdout) as { workflow: string }[]).map((each) => each.workflow),
      );
    expect(await ids([])).toEqual([workflow]);
    expect((await ids(["--all"])).length).toBeGreaterThan(1);
    expect((await cli(steward, ["cancel", workflow])).code).toBe(0);
    expect(await ids([])).toEqual([]);
    expect(await ids(["--all"])).toContain(workflow);
    const mixed = await cli(steward, ["ps", "--workflows", "--state", "running"]);
    expect(mixed.code).toBe(2);
    expect(mixed.stderr).toContain(
      "--workflows takes --all, --user, --no-header and --json only, not --state",
    );
  }, 60_000);
});

describe("hold, release and cancel answer the state after", () => {
  it("hold prints held, cancel cancelled (once the running attempt stopped); release of a job not held exits 1", async () => {
    const id = await submit({ name: "holdme", command: "sleep 60" });
    await waitFor("it to run", async () => (await getJob(steward, id)).state === "running");
    const held = await cli(steward, ["hold", id]);
    expect(held.code, held.stderr).toBe(0);
    expect(held.stdout).toBe(`job ${id}: held\n`);
    const released = await cli(steward, ["release", id]);
    expect(released.code, released.stderr).toBe(0);
    expect(released.stdout).toMatch(new RegExp(`^job ${id}: (pending|running)\\n$`));
    const again = await cli(steward, ["release", id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(new RegExp(`^steward: job ${id}: not held \\((pending|running)\\)\\n$`));
    await waitFor("it to run again", async () => (await getJob(steward, id)).state === "running");
    const cancelled = await cli(steward, ["cancel", id]);
    expect(cancelled.code, cancelled.stderr).toBe(0);
    expect(cancelled.stdout).toBe(`job ${id}: cancelled\n`);
    const ended = await cli(steward, ["release", id]);
    expect(ended.code).toBe(1);
    expect(ended.stderr).toBe(`steward: job ${id}: not held (cancelled)\n`);
  }, 60_000);

  it("hold --reason keeps the reason in the job's events, and show prints it", async () => {
    const id = await submit({ name: "reasoned", command: "sleep 60" });
    const held = await cli(steward, ["hold", id, "--reason", "disk full on scratch"]);
    expect(held.code, held.stderr).toBe(0);
    const shown = await cli(steward, ["show", id]);
    expect(shown.stdout).toMatch(/ hold {2,}held by admin: disk full on scratch\n/);
    await cli(steward, ["cancel", id]);
  }, 60_000);
});

describe("wait's outcome lines", () => {
  it("one line per job on stderr: succeeded, or failed with the first failed task's exit code", async () => {
    const ok = await submit({ command: "true" });
    const bad = await submit({
      command: ["sh", "-c", "exit $((STEWARD_TASK_INDEX == 2 ? 1 : 0))"],
      array: 4,
    });
    const waited = await cli(steward, ["wait", ok, bad]);
    expect(waited.code).toBe(1);
    expect(waited.stdout).toBe("");
    expect(waited.stderr).toBe(`job ${ok}: succeeded\njob ${bad}: failed (task 2 exited 1)\n`);
    const file = join(steward.data, "fails.json");
    writeFileSync(file, JSON.stringify({ command: ["sh", "-c", "exit 7"] }));
    const submitted = await cli(steward, ["submit", file, "--wait"]);
    expect(submitted.code).toBe(1);
    const id = submitted.stdout.trim();
    expect(submitted.stderr).toBe(`job ${id}: failed (task 0 exited 7)\n`);
  }, 60_000);
});

describe("show and ps", () => {
  it("show lists an array's parameters, a column of the task table", async () => {
    const id = await submit({
      name: "params",
      command: "echo $STEWARD_TASK_PARAM",
      array: { params: ["alpha", "beta"] },
    });
    await waitForJobEnd(steward, id);
    const shown = await cli(steward, ["show", id]);
    expect(shown.code, shown.stderr).toBe(0);
    const lines = shown.stdout.split("\n");
    const header = lines.find((line) => line.startsWith("TASK"));
    expect(header).toMatch(/^TASK\s+PARAM\s+STATE\s+ATTEMPT/);
    expect(lines.find((line) => line.startsWith("0 "))).toMatch(/^0\s+alpha\s+succeeded/);
    expect(lines.find((line) => line.startsWith("1 "))).toMatch(/^1\s+beta\s+succeeded/);
  }, 60_000);

  it("show sizes the events' kind column to the longest kind (attempt.succeeded)", async () => {
    // Every event's message starts in one column, the longest kind included.
    const single = await submit({ name: "single", command: "true" });
    await waitForJobEnd(steward, single);
    const shownSingle = await cli(steward, ["show", single]);
    const singleLines = shownSingle.stdout.split("\n");
    const events = singleLines.slice(singleLines.indexOf("events:") + 1).filter(Boolean);
    const kinds = events.map((line) => line.split(/\s+/)[3]);
    expect(kinds).toContain("attempt.succeeded");
    // The column where each message starts: the first letter after the kind.
    const messageColumn = (line: string, kind: string) => {
      const after = line.indexOf(kind) + kind.length;
      return after + line.slice(after).search(/\S/);
    };
    const columns = events.map((line, index) => messageColumn(line, kinds[index]));
    expect(new Set(columns).size, shownSingle.stdout).toBe(1);
  }, 60_000);

  it("ps --name takes an exact name or a glob", async () => {
    const first = await submit({ name: "psname-one", command: "sleep 30" });
    const second = await submit({ name: "psname-two", command: "sleep 30" });
    const unrelated = await submit({ name: "unrelated", command: "sleep 30" });
    const ids = async (args: string[]) => {
      const result = await cli(steward, ["ps", "--json", ...args]);
      expect(result.code, result.stderr).toBe(0);
      return (JSON.parse(result.stdout) as { id: string }[]).map((job) => job.id);
    };
    expect(await ids(["--name", "psname-one"])).toEqual([first]);
    expect(await ids(["--name", "psname-*"])).toEqual([first, second]);
    expect(await ids(["--name", "psname-t?o"])).toEqual([second]);
    expect(await ids(["--name", "psname"])).toEqual([]);
    for (const id of [first, second, unrelated]) await cli(steward, ["cancel", id]);
  }, 60_000);
});

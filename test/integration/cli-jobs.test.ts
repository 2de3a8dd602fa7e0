// The CLI's job commands against a real server and agent on loopback: `logs -f` across attempts,
// workflow ids wherever a job id goes, hold/release/cancel answers, wait's outcome lines, show's
// tables and `ps --name`.

import { type ChildProcess, spawn } from "node:child_process";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  api,
  cleanup,
  cli,
  getJob,
  STEWARD,
  type StewardProcess,
  startUp,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

let steward: StewardProcess;

beforeAll(async () => {
  steward = await startUp({ agents: 1, slots: 4 });
}, 60_000);

afterAll(async () => {
  await steward?.stop();
  cleanup(steward?.data);
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

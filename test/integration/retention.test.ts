// `steward rm --older-than AGE` cleans up a long history: every job that ended before the cutoff
// goes, with its files; running jobs and newer ones stay; a user's run removes only their own.

import { existsSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { JobSummary } from "../../src/common/api/jobs.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  cli,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  waitForJobEnd,
} from "../helpers/steward.ts";

let server: StewardProcess & { joinToken: string };
let agent: AgentProcess;

beforeAll(async () => {
  server = await startServerProcess();
  agent = await startAgentProcess({
    name: "r1",
    slots: 4,
    servers: [server.url],
    joinToken: server.joinToken,
  });
}, 60_000);

afterAll(async () => {
  await agent?.crash();
  await server?.stop();
  cleanup(server?.data ?? "", agent?.work ?? "");
});

async function submit(body: object, token = server.token): Promise<string> {
  return ((await api({ url: server.url, token }, "POST", "/api/v1/jobs", body)) as { id: string }).id;
}

it("needs ids or --older-than, not both", async () => {
  const none = await cli(server, ["rm"]);
  expect(none.code).toBe(2);
  expect(none.stderr).toContain("name the jobs to remove, or give --older-than AGE");
  expect((await cli(server, ["rm", "1", "--older-than", "1d"])).code).toBe(2);
  expect((await cli(server, ["rm", "--older-than", "soon"])).stderr).toContain("an age such as 30d");
});

it("removes the jobs that ended before the cutoff with their files, and nothing else", async () => {
  const old = [];
  for (let i = 0; i < 3; i++)
    old.push(await submit({ name: `old-${i}`, command: "echo data > out.txt", outputs: ["out.txt"] }));
  for (const id of old) expect((await waitForJobEnd(server, id)).state).toBe("succeeded");
  const files = join(server.data, "blobs", "jobs", old[0]);
  expect(existsSync(files)).toBe(true);
  await sleep(1500);
  const running = await submit({ name: "running", command: "sleep 60" });
  const recent = await submit({ name: "recent", command: "true" });
  await waitForJobEnd(server, recent);

  const result = await cli(server, ["rm", "--older-than", "1s"]);
  expect(result.code, result.stderr).toBe(0);
  expect(result.stdout).toMatch(/^removed 3 jobs that ended before \d{4}-\d\d-\d\dT/);
  const left = JSON.parse((await cli(server, ["ps", "--all", "--json"])).stdout) as JobSummary[];
  expect(left.map((job) => job.id).sort()).toEqual([running, recent].sort());
  expect(existsSync(files)).toBe(false);
  await cli(server, ["cancel", running]);
});

it("a user's run removes only their own old jobs", async () => {
  const made = await cli(server, ["token", "create", "--user", "uma", "--role", "user"]);
  const uma = made.stdout.trim();
  const hers = await submit({ name: "hers", command: "true" }, uma);
  const admins = await submit({ name: "admins", command: "true" });
  await waitForJobEnd(server, hers);
  await waitForJobEnd(server, admins);
  await sleep(1200);
  const result = await cli({ url: server.url, token: uma }, ["rm", "--older-than", "1s"]);
  expect(result.stdout).toMatch(/^removed 1 job that ended before /);
  const left = (await api(server, "GET", "/api/v1/jobs?all=1")) as JobSummary[];
  expect(left.map((job) => job.id)).toContain(admins);
  expect(left.map((job) => job.id)).not.toContain(hers);
});

it("ps pages through a long list with --limit and --after, saying how to get the next page", async () => {
  for (let i = 0; i < 4; i++) await submit({ name: `page-${i}`, command: "true" });
  const all = (JSON.parse((await cli(server, ["ps", "--all", "--json"])).stdout) as JobSummary[]).map(
    (job) => job.id,
  );
  expect(all.length).toBeGreaterThan(3);
  const first = await cli(server, ["ps", "--all", "--limit", "2", "--json"]);
  expect((JSON.parse(first.stdout) as JobSummary[]).map((job) => job.id)).toEqual(all.slice(0, 2));
  const table = await cli(server, ["ps", "--all", "--limit", "2"]);
  expect(table.stderr).toBe(`more jobs follow: steward ps ... --after ${all[1]}\n`);
  const next = await cli(server, ["ps", "--all", "--limit", "2", "--after", all[1], "--json"]);
  expect((JSON.parse(next.stdout) as JobSummary[]).map((job) => job.id)).toEqual(all.slice(2, 4));
  const last = await cli(server, ["ps", "--all", "--after", all[all.length - 2]]);
  expect(last.stderr).toBe("");
  expect((await cli(server, ["ps", "--limit", "0"])).stderr).toContain(
    "--limit needs a whole number of at least 1",
  );
});

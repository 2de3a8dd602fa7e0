// Limits that keep one client from hurting the others: the size of a job file, the size of an
// array, and the submits a user token may make (429 with a retry hint; admin tokens are not limited).

import { afterAll, beforeAll, expect, it } from "vitest";
import { api, cleanup, cli, type StewardProcess, startServerProcess } from "../helpers/steward.ts";

let server: StewardProcess & { joinToken: string };
let user: string;

beforeAll(async () => {
  // One submit in 4 s after a burst of 3: a slow machine cannot refill the bucket between the test's posts.
  server = await startServerProcess({ args: ["--submit-rate", "0.25", "--submit-burst", "3"] });
  const made = await cli(server, ["token", "create", "--user", "limited", "--role", "user"]);
  expect(made.code, made.stderr).toBe(0);
  user = made.stdout.trim();
}, 60_000);

afterAll(async () => {
  await server?.stop();
  cleanup(server?.data ?? "");
});

async function post(
  token: string,
  body: string | FormData,
  type?: string,
): Promise<{ status: number; retryAfter: string | null; body: { error?: { message: string } } }> {
  const response = await fetch(`${server.url}/api/v1/jobs`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, ...(type ? { "content-type": type } : {}) },
    body,
  });
  return {
    status: response.status,
    retryAfter: response.headers.get("retry-after"),
    body: (await response.json()) as { error?: { message: string } },
  };
}

async function jobCount(): Promise<number> {
  return ((await api(server, "GET", "/api/v1/jobs?all=1")) as unknown[]).length;
}

it("a job file over 1 MiB is refused with 413, as JSON or as the multipart job field", async () => {
  const before = await jobCount();
  const huge = { command: "true", env: { BIG: "x".repeat(1_100_000) } };
  const json = await post(server.token, JSON.stringify(huge), "application/json");
  expect(json.status).toBe(413);
  expect(json.body.error?.message).toBe(
    "the job file is larger than 1 MiB; send big data as input files, not in the job file",
  );
  const form = new FormData();
  form.set("job", JSON.stringify(huge));
  const multipart = await post(server.token, form);
  expect(multipart.status).toBe(413);
  expect(multipart.body.error?.message).toContain("the job file is larger than 1 MiB");
  expect(await jobCount()).toBe(before);
});

it("an array over 1,000,000 tasks is refused with 400 naming the field", async () => {
  const answer = await post(
    server.token,
    JSON.stringify({ command: "true", array: { count: 1_000_001 } }),
    "application/json",
  );
  expect(answer.status).toBe(400);
  expect(answer.body.error?.message).toMatch(/^array\.count: /);
});

it("a user token's submits over the rate get 429 with a retry hint; the admin token is not limited", async () => {
  const job = JSON.stringify({ command: "true" });
  const answers = [];
  for (let i = 0; i < 4; i++) answers.push(await post(user, job, "application/json"));
  expect(answers.map((answer) => answer.status)).toEqual([201, 201, 201, 429]);
  const refused = answers[3];
  expect(Number(refused.retryAfter)).toBeGreaterThanOrEqual(1);
  expect(refused.body.error?.message).toMatch(
    /^too many submits from limited's token: at most 0\.25 a second \(bursts of 3\); try again in \d\.\d\d s$/,
  );
  for (let i = 0; i < 10; i++) expect((await post(server.token, job, "application/json")).status).toBe(201);
  // After the hint, the user may submit again.
  await new Promise((done) => setTimeout(done, 1000 * Number(refused.retryAfter)));
  expect((await post(user, job, "application/json")).status).toBe(201);
});

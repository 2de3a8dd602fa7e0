// A job's own S3 credentials, from a secret its submitter set, with real processes: a server, one
// agent with no AWS variable, profile file or endpoint of its own, and s3rver on loopback
// (test/helpers/s3-server.ts) given a key pair of distinctive values. The secret set by the CLI
// (--from-env, then again from standard input) signs an s3: input and an output push; a wrong one
// fails the attempt naming the URL; a name the submitter has no secret of (none, or another
// user's) is refused at submit naming the field. The values are then looked for, and never found,
// in the attempt's folder (start.json names the secret only), the agent's work folder, the
// broker's log, the events, the job's JSON and the secrets' list.

import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  addS3Key,
  removeS3Key,
  type S3Server,
  startS3Server,
  withoutAwsSettings,
} from "../helpers/s3-server.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  cli,
  type EventStreamReader,
  getJob,
  openEventStream,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

const JOB_KEY = "AKIAJOBSECRETKEY7Q2X";
const JOB_SECRET = "job-secret-5f0c2e9d71b8a4";
const WRONG_SECRET = "wrong-job-secret-83d1c6";

let s3: S3Server;
let server: (StewardProcess & { joinToken: string }) | undefined;
let agent: AgentProcess | undefined;
let events: EventStreamReader | undefined;
let home: string;
const jobs: string[] = [];
const printed: string[] = [];

beforeAll(async () => {
  s3 = await startS3Server(["inputs", "outputs"]);
  addS3Key(JOB_KEY, JOB_SECRET);
  home = tempDir("steward-s3-secrets-");
  server = await startServerProcess();
  events = await openEventStream(server);
  agent = await startAgentProcess({
    name: "bare",
    servers: [server.url],
    joinToken: server.joinToken,
    // No AWS variable, and a home without ~/.aws: the agent has no credentials and no endpoint.
    prefix: ["env", ...withoutAwsSettings(), `HOME=${home}`],
  });
  await waitFor("the agent connected", async () => (await api(server!, "GET", "/api/v1/hosts")).length === 1);
});

afterAll(async () => {
  events?.close();
  await agent?.stop();
  await server?.stop();
  removeS3Key(JOB_KEY);
  await s3?.close();
  cleanup(server?.data ?? "", agent?.work ?? "", home, s3?.folder ?? "");
});

async function submit(job: Record<string, unknown>): Promise<string> {
  const { id } = (await api(server!, "POST", "/api/v1/jobs", job)) as { id: string };
  jobs.push(id);
  return id;
}

/** Every file under `dir` with its text. */
function filesUnder(dir: string): { path: string; text: string }[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" })
    .map((name) => join(dir, name))
    .filter((path) => statSync(path, { throwIfNoEntry: false })?.isFile())
    .map((path) => ({ path, text: readFileSync(path, "latin1") }));
}

it("sets a secret from the caller's environment, again from standard input, and lists it without its value", async () => {
  const fromEnv = await cli(server!, ["secret", "set", "readers", "--from-env"], {
    env: { AWS_ACCESS_KEY_ID: JOB_KEY, AWS_SECRET_ACCESS_KEY: JOB_SECRET, AWS_ENDPOINT_URL_S3: s3.url },
  });
  expect(fromEnv).toMatchObject({ code: 0, stdout: "secret readers set\n" });
  const value = JSON.stringify({ accessKeyId: JOB_KEY, secretAccessKey: JOB_SECRET, endpoint: s3.url });
  const fromStdin = await cli(server!, ["secret", "set", "readers"], {
    env: { VALUE: value },
    prefix: ["sh", "-c", 'printf "%s" "$VALUE" | "$@"', "sh"],
  });
  expect(fromStdin).toMatchObject({ code: 0, stdout: "secret readers replaced\n" });
  const listed = await cli(server!, ["secret", "list", "--json"]);
  expect(JSON.parse(listed.stdout)).toStrictEqual([
    { name: "readers", createdAt: expect.any(String), updatedAt: expect.any(String) },
  ]);
  printed.push(fromEnv.stdout, fromEnv.stderr, fromStdin.stdout, fromStdin.stderr, listed.stdout);
});

it("signs an s3: input and an output push with the job's secret, kept out of the attempt's folder", async () => {
  await s3.put("inputs", "runs/grid.txt", "the grid\n");
  const go = join(home, "go");
  const id = await submit({
    command: `test "$(cat grid.txt)" = "the grid" && while [ ! -e ${go} ]; do sleep 0.1; done && echo result > out.txt`,
    inputs: [{ url: "s3://inputs/runs/grid.txt", credentials: "readers" }],
    outputs: [{ path: "out.txt", to: "s3://outputs/runs/out.txt", credentials: "readers" }],
  });
  // Its input staged: the job runs, waiting for the go file.
  const files = await waitFor("the input staged", () => {
    const found = filesUnder(agent!.work);
    return found.some((file) => file.path.endsWith("/run/grid.txt")) ? found : null;
  });
  const start = files.find(
    (file) => file.path.endsWith("start.json") && file.text.includes(`"jobId":"${id}"`),
  );
  expect(start, "the attempt's start.json").toBeDefined();
  expect(JSON.parse(start!.text)).toMatchObject({
    urlInputs: [{ url: "s3://inputs/runs/grid.txt", credentials: "readers" }],
    urlOutputs: [{ to: "s3://outputs/runs/out.txt", credentials: "readers" }],
  });
  expect(JSON.parse(start!.text)).not.toHaveProperty("secrets");
  for (const file of files)
    for (const value of [JOB_KEY, JOB_SECRET]) expect(file.text, file.path).not.toContain(value);
  writeFileSync(go, "");
  expect((await waitForJobEnd(server!, id)).state).toBe("succeeded");
  expect(String(await s3.get("outputs", "runs/out.txt"))).toBe("result\n");
  const asked = s3.requests.filter((each) =>
    ["/inputs/runs/grid.txt", "/outputs/runs/out.txt"].includes(each.path),
  );
  expect(asked.map((each) => [each.method, each.status, each.signed])).toStrictEqual([
    ["GET", 200, true],
    ["PUT", 200, true],
  ]);
  // The job shows the name only.
  const job = await getJob(server!, id);
  expect(job.spec.inputs).toStrictEqual([{ url: "s3://inputs/runs/grid.txt", credentials: "readers" }]);
});

it("fails the attempt naming the URL when the secret's key is refused by the store", async () => {
  const set = await fetch(`${server!.url}/api/v1/secrets/wrong`, {
    method: "PUT",
    headers: { authorization: `Bearer ${server!.token}`, "content-type": "application/json" },
    body: JSON.stringify({ accessKeyId: JOB_KEY, secretAccessKey: WRONG_SECRET, endpoint: s3.url }),
  });
  expect(set.status).toBe(201);
  const answer = await set.text();
  expect(JSON.parse(answer)).toStrictEqual({
    name: "wrong",
    createdAt: expect.any(String),
    updatedAt: expect.any(String),
  });
  printed.push(answer);
  const id = await submit({
    command: "true",
    inputs: [{ url: "s3://inputs/runs/grid.txt", credentials: "wrong", as: "other.txt" }],
  });
  const attempt = await waitFor("the first attempt's end", async () => {
    const first = (await getJob(server!, id)).tasks[0].attempts[0];
    return first?.outcome ? first : null;
  });
  await api(server!, "POST", `/api/v1/jobs/${id}/cancel`);
  expect(attempt.outcome).toBe("lost");
  expect(attempt.reason).toBe(
    "staging inputs failed: s3://inputs/runs/grid.txt: HTTP 403 SignatureDoesNotMatch",
  );
});

it("refuses at submit a credentials that names no secret of the submitter's, naming the field", async () => {
  const none = await fetch(`${server!.url}/api/v1/jobs`, {
    method: "POST",
    headers: { authorization: `Bearer ${server!.token}`, "content-type": "application/json" },
    body: JSON.stringify({
      command: "true",
      outputs: [{ path: "o", to: "s3://outputs/o", credentials: "nope" }],
    }),
  });
  expect(none.status).toBe(400);
  expect(((await none.json()) as { error: { message: string } }).error.message).toContain(
    "outputs[0].credentials",
  );
  // Another user's submit naming the admin's secret: they have none of that name.
  const made = (await api(server!, "POST", "/api/v1/tokens", { user: "bob", role: "user" })) as {
    token: string;
  };
  const bob = { url: server!.url, token: made.token };
  const refused = await cli(bob, ["submit", "-"], {
    env: {
      JOB: JSON.stringify({ command: "true", inputs: [{ url: "s3://inputs/x", credentials: "readers" }] }),
    },
    prefix: ["sh", "-c", 'printf "%s" "$JOB" | "$@"', "sh"],
  });
  expect(refused.code).not.toBe(0);
  expect(refused.stderr).toContain("inputs[0].credentials: you have no secret readers");
  const bobs = (await api(bob, "GET", "/api/v1/secrets")) as unknown[];
  expect(bobs).toStrictEqual([]);
});

it("removes a secret: gone from the list, a second removal is 404", async () => {
  const removed = await cli(server!, ["secret", "rm", "wrong"]);
  expect(removed).toMatchObject({ code: 0, stdout: "secret wrong removed\n" });
  const again = await cli(server!, ["secret", "rm", "wrong"]);
  expect(again.code).toBe(3);
  expect(again.stderr).toContain("no secret wrong");
  const names = ((await api(server!, "GET", "/api/v1/secrets")) as { name: string }[]).map(
    (each) => each.name,
  );
  expect(names).toStrictEqual(["readers"]);
});

it("shows no secret value in the agent's folder, the broker's log, the events or any answer", async () => {
  const texts = [
    ...filesUnder(agent!.work).map((file) => file.text),
    server!.output(),
    agent!.output(),
    JSON.stringify(events!.received),
    JSON.stringify(await Promise.all(jobs.map((id) => getJob(server!, id)))),
    JSON.stringify(await api(server!, "GET", "/api/v1/secrets")),
    ...printed,
  ];
  expect(events!.received.length).toBeGreaterThan(0);
  for (const text of texts)
    for (const value of [JOB_KEY, JOB_SECRET, WRONG_SECRET]) expect(text).not.toContain(value);
});

// s3: inputs and outputs pushed to URLs, with real processes: a server, two agents and an
// S3-compatible server on loopback (s3rver, which checks AWS Signature V4: test/helpers/s3-server.ts)
// that the agents reach themselves, never through the broker. One agent has its credentials and
// endpoint in its environment, the other in a profile of the shared files (rewritten between jobs:
// the agent reads them for each attempt). An s3: input is fetched and checked against its sha256
// (a wrong one refused); a transfer cut halfway is resumed with a Range request; an output is
// pushed to s3 and read back, another PUT to an HTTP server that fails once (tried again); wrong
// credentials (SignatureDoesNotMatch, InvalidAccessKeyId: 403) and a missing bucket (404) fail the
// attempt as a system failure naming the s3: URL. An agent of an earlier release (a stand-in that
// says no `transfers`) is given no such job, explain saying why. No secret shows in any event, log
// or API answer.

import { createHash, randomBytes } from "node:crypto";
import { writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { facts } from "../helpers/agent-messages.ts";
import { rawHello } from "../helpers/raw-agent.ts";
import {
  S3RVER_KEY,
  S3RVER_SECRET,
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

/** A secret that must never show: the wrong one the profile is given for a while. */
const WRONG_SECRET = "wrong-secret-7c1e9a";
const UNKNOWN_KEY = "AKIAUNKNOWN00000000";

let s3: S3Server;
let server: (StewardProcess & { joinToken: string }) | undefined;
let byEnvironment: AgentProcess | undefined;
let byProfile: AgentProcess | undefined;
let events: EventStreamReader | undefined;
let folder: string;
let puts: { server: Server; url: string; bodies: Map<string, Buffer>; seen: string[] } | undefined;
const jobs: string[] = [];

/** The profile agent's credentials file, `steward` profile, with this secret. */
function writeProfile(key: string, secret: string): void {
  writeFileSync(
    join(folder, "credentials"),
    `[default]\naws_access_key_id = nobody\naws_secret_access_key = nothing\n\n[steward]\naws_access_key_id = ${key}\naws_secret_access_key = ${secret}\n`,
  );
}

/** `env` before the agent: no AWS variable of the test's, a home of its own, then these. */
function environment(home: string, variables: Record<string, string>): string[] {
  return [
    "env",
    ...withoutAwsSettings(),
    `HOME=${home}`,
    ...Object.entries(variables).map(([name, value]) => `${name}=${value}`),
  ];
}

/** An HTTP server that takes PUTs, answering the first one of each path 503. */
async function startPutServer() {
  const bodies = new Map<string, Buffer>();
  const seen: string[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const path = request.url ?? "/";
      const first = !seen.includes(path);
      seen.push(path);
      if (request.method !== "PUT" || first) {
        response.writeHead(first ? 503 : 405).end();
        return;
      }
      bodies.set(path, Buffer.concat(chunks));
      response.writeHead(201).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, bodies, seen };
}

beforeAll(async () => {
  s3 = await startS3Server(["inputs", "outputs"]);
  puts = await startPutServer();
  folder = tempDir("steward-s3-data-");
  writeProfile(S3RVER_KEY, S3RVER_SECRET);
  writeFileSync(join(folder, "config"), `[profile steward]\nregion = eu-west-3\nendpoint_url = ${s3.url}\n`);
  server = await startServerProcess();
  events = await openEventStream(server);
  byEnvironment = await startAgentProcess({
    name: "env",
    servers: [server.url],
    joinToken: server.joinToken,
    prefix: environment(folder, {
      AWS_ACCESS_KEY_ID: S3RVER_KEY,
      AWS_SECRET_ACCESS_KEY: S3RVER_SECRET,
      AWS_ENDPOINT_URL: s3.url,
    }),
  });
  byProfile = await startAgentProcess({
    name: "files",
    servers: [server.url],
    joinToken: server.joinToken,
    prefix: environment(folder, {
      AWS_PROFILE: "steward",
      AWS_SHARED_CREDENTIALS_FILE: join(folder, "credentials"),
      AWS_CONFIG_FILE: join(folder, "config"),
    }),
  });
  await waitFor(
    "both agents connected",
    async () => (await api(server!, "GET", "/api/v1/hosts")).length === 2,
  );
});

afterAll(async () => {
  events?.close();
  await byEnvironment?.stop();
  await byProfile?.stop();
  await server?.stop();
  await s3?.close();
  await new Promise((resolve) => puts?.server.close(resolve));
  cleanup(server?.data ?? "", byEnvironment?.work ?? "", byProfile?.work ?? "", folder, s3?.folder ?? "");
});

async function submit(host: string, job: Record<string, unknown>): Promise<string> {
  const { id } = (await api(server!, "POST", "/api/v1/jobs", {
    ...job,
    requirements: `host.name == "${host}"`,
  })) as { id: string };
  jobs.push(id);
  return id;
}

/** The first attempt once it ended (the task may go round again after a system failure: cancelled then). */
async function firstAttemptEnd(id: string) {
  const attempt = await waitFor("the first attempt's end", async () => {
    const first = (await getJob(server!, id)).tasks[0].attempts[0];
    return first?.outcome ? first : null;
  });
  await api(server!, "POST", `/api/v1/jobs/${id}/cancel`);
  return attempt;
}

const digest = (content: Buffer | string) => createHash("sha256").update(content).digest("hex");

it("fetches an s3: input with the agent's credentials from its environment, and from its profile", async () => {
  await s3.put("inputs", "runs/grid.txt", "the grid\n");
  for (const host of ["env", "files"]) {
    const id = await submit(host, {
      command: 'test "$(cat grid.txt)" = "the grid" && test "$(cat in/copy.txt)" = "the grid"',
      inputs: [
        { url: "s3://inputs/runs/grid.txt", sha256: digest("the grid\n") },
        { url: "s3://inputs/runs/grid.txt", as: "in/copy.txt" },
      ],
    });
    expect((await waitForJobEnd(server!, id)).state, host).toBe("succeeded");
  }
  const asked = s3.requests.filter((each) => each.path === "/inputs/runs/grid.txt");
  expect(asked.length).toBeGreaterThanOrEqual(2);
  expect(asked.every((each) => each.signed)).toBe(true);
});

it("fails an attempt whose s3: input has not the sha256 given, as a system failure naming the URL", async () => {
  await s3.put("inputs", "wrong.txt", "not what was promised");
  const promised = "0".repeat(64);
  const id = await submit("env", {
    command: "true",
    inputs: [{ url: "s3://inputs/wrong.txt", sha256: promised }],
  });
  const attempt = await firstAttemptEnd(id);
  expect(attempt.outcome).toBe("lost");
  expect(attempt.reason).toBe(
    `staging inputs failed: sha256 mismatch for s3://inputs/wrong.txt: expected ${promised}, got ${digest("not what was promised")}`,
  );
});

it("resumes an s3: transfer cut halfway with a Range request", async () => {
  const big = randomBytes(2 * 1024 * 1024);
  await s3.put("inputs", "big.bin", big);
  s3.cut("/inputs/big.bin", 700_000);
  const id = await submit("files", {
    command: `test "$(sha256sum big.bin | cut -d' ' -f1)" = ${digest(big)}`,
    inputs: [{ url: "s3://inputs/big.bin" }],
  });
  expect((await waitForJobEnd(server!, id)).state).toBe("succeeded");
  const asked = s3.requests.filter((each) => each.path === "/inputs/big.bin");
  expect(asked.map((each) => each.status)).toStrictEqual([200, 206]);
  expect(asked[1].range).toMatch(/^bytes=[1-9]\d*-$/);
});

it("pushes outputs to s3 and to an HTTP server (tried again after its 503), beside a plain output", async () => {
  const id = await submit("env", {
    command: "echo result > out.txt && echo table > t.csv && echo kept > kept.txt",
    outputs: [
      { path: "out.txt", to: "s3://outputs/runs/1/out.txt" },
      { path: "t.csv", to: `${puts!.url}/upload/t.csv` },
      "kept.txt",
    ],
  });
  expect((await waitForJobEnd(server!, id)).state).toBe("succeeded");
  expect(String(await s3.get("outputs", "runs/1/out.txt"))).toBe("result\n");
  expect(String(puts!.bodies.get("/upload/t.csv"))).toBe("table\n");
  expect(puts!.seen.filter((path) => path === "/upload/t.csv")).toHaveLength(2);
  // Only the plain one is kept by the server.
  const stored = (await api(server!, "GET", `/api/v1/jobs/${id}/outputs`)) as { path: string }[];
  expect(stored.map((file) => file.path)).toStrictEqual(["kept.txt"]);
});

it("fails a job whose output to push is missing, as for any missing output", async () => {
  const id = await submit("env", {
    command: "true",
    outputs: [{ path: "none.txt", to: "s3://outputs/none.txt" }],
  });
  const job = await waitForJobEnd(server!, id);
  expect(job.state).toBe("failed");
  expect(job.tasks[0].attempts[0].reason).toBe("output file missing: none.txt");
  expect(await s3.get("outputs", "none.txt")).toBeNull();
});

it("fails the attempt naming the s3: URL for wrong credentials and a missing bucket, inputs and outputs", async () => {
  await s3.put("inputs", "data.txt", "data\n");
  writeProfile(S3RVER_KEY, WRONG_SECRET);
  const signature = await submit("files", { command: "true", inputs: [{ url: "s3://inputs/data.txt" }] });
  expect((await firstAttemptEnd(signature)).reason).toBe(
    "staging inputs failed: s3://inputs/data.txt: HTTP 403 SignatureDoesNotMatch",
  );
  const pushed = await submit("files", {
    command: "echo x > o.txt",
    outputs: [{ path: "o.txt", to: "s3://outputs/o.txt" }],
  });
  const refused = await firstAttemptEnd(pushed);
  expect(refused.outcome).toBe("lost");
  expect(refused.reason).toBe("staging outputs failed: s3://outputs/o.txt: HTTP 403 SignatureDoesNotMatch");
  writeProfile(UNKNOWN_KEY, WRONG_SECRET);
  const key = await submit("files", { command: "true", inputs: [{ url: "s3://inputs/data.txt" }] });
  expect((await firstAttemptEnd(key)).reason).toBe(
    "staging inputs failed: s3://inputs/data.txt: HTTP 403 InvalidAccessKeyId",
  );
  writeProfile(S3RVER_KEY, S3RVER_SECRET);

  const bucket = await submit("env", { command: "true", inputs: [{ url: "s3://no-such-bucket/data.txt" }] });
  const missing = await firstAttemptEnd(bucket);
  expect(missing.outcome).toBe("lost");
  expect(missing.reason).toBe("staging inputs failed: s3://no-such-bucket/data.txt: HTTP 404 NoSuchBucket");
  const nowhere = await submit("env", {
    command: "echo x > o.txt",
    outputs: [{ path: "o.txt", to: "s3://no-such-bucket/o.txt" }],
  });
  expect((await firstAttemptEnd(nowhere)).reason).toBe(
    "staging outputs failed: s3://no-such-bucket/o.txt: HTTP 404 NoSuchBucket",
  );
  // A refusal is not tried again.
  expect(s3.requests.filter((each) => each.path === "/no-such-bucket/data.txt")).toHaveLength(1);
});

it("places a job with s3: inputs or outputs to push on no agent of an earlier release, explain saying why", async () => {
  // An agent of an earlier release: no `transfers` among its facts.
  const { ws, answer } = await rawHello(server!.url, { name: "old", token: server!.joinToken });
  expect(answer.type).toBe("welcome");
  const beat = setInterval(() => ws.send(JSON.stringify({ type: "heartbeat", facts: facts("old") })), 500);
  try {
    const id = await submit("old", { command: "true", inputs: [{ url: "s3://inputs/runs/grid.txt" }] });
    const pushing = await submit("old", { command: "true", outputs: [{ path: "o", to: "https://h/o" }] });
    const fetched = await submit("old", { command: "true", inputs: [{ url: "https://h/x" }] });
    const plain = await submit("old", { command: "true" });
    // The plain one is started there (and left: the stand-in runs nothing), the others never are:
    // even an http(s) input, which an agent from before URL inputs would leave out.
    await waitFor(
      "the plain job placed",
      async () => (await getJob(server!, plain)).tasks[0].attempts.length === 1,
    );
    for (const [job, transfer] of [
      [id, "s3-inputs"],
      [pushing, "url-outputs"],
      [fetched, "url-inputs"],
    ]) {
      expect((await getJob(server!, job)).tasks[0].attempts).toHaveLength(0);
      const explained = await cli(server!, ["explain", job]);
      expect(explained.stdout).toMatch(
        new RegExp(`\\nold +no +host agent does not do ${transfer} \\(an earlier release\\)\\n`),
      );
    }
    for (const job of [id, pushing, fetched, plain]) await api(server!, "POST", `/api/v1/jobs/${job}/cancel`);
  } finally {
    clearInterval(beat);
    ws.close();
  }
});

it("shows no secret in any event, log or API answer", async () => {
  const answers = [
    JSON.stringify(await Promise.all(jobs.map((id) => getJob(server!, id)))),
    JSON.stringify(await api(server!, "GET", "/api/v1/hosts")),
    JSON.stringify(events!.received),
    server!.output(),
    byEnvironment!.output(),
    byProfile!.output(),
  ];
  expect(events!.received.length).toBeGreaterThan(0);
  for (const text of answers)
    for (const secret of [S3RVER_SECRET, WRONG_SECRET, UNKNOWN_KEY]) expect(text).not.toContain(secret);
});

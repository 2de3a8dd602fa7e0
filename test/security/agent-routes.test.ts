// The agents' file routes and log messages are bound to the calling host (issue 22, items 1 and 6):
// a host reads the inputs and checkpoint of attempts placed on it and writes outputs, logs and
// checkpoints of its own live attempts only. Another joined host, or a join token of any kind
// (here a pool's token for another pool), gets the 404 an absent attempt gets, and a log message
// for an attempt it does not run leaves the log as it was.

import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, beforeAll, expect, it } from "vitest";
import { stringify } from "yaml";
import { poolJoinToken } from "../../src/broker/pools/pool-token.ts";
import type { ServerMessage } from "../../src/common/protocol/messages.ts";
import { type RawHello, rawHello } from "../helpers/raw-agent.ts";
import {
  type AgentProcess,
  cleanup,
  cli,
  getJob,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
} from "../helpers/steward.ts";

let server: StewardProcess & { joinToken: string };
let owner: AgentProcess;
/** The credential of the host running the job (what its agent keeps in its work folder). */
let ownerCredential: string;
/** The credential of a second host that joined with the join token and runs nothing of the job. */
let intruderCredential: string;
/** A pool's join token, for a pool the job's host is not in. */
let otherPoolToken: string;
let id: string;
const dir = tempDir("steward-agent-routes-");
const go = join(dir, "go");
const INPUT = "the input of someone else's job\n";
const sha = (text: string) => createHash("sha256").update(text).digest("hex");

const hello = (fields: RawHello) => rawHello(server.url, fields);

beforeAll(async () => {
  server = await startServerProcess({ hostTimeoutSeconds: 30 });
  owner = await startAgentProcess({ name: "owner-host", servers: [server.url], joinToken: server.joinToken });
  const credentialFile = join(owner.work, "host-credential");
  await waitFor("the owner's host credential", () => existsSync(credentialFile));
  ownerCredential = readFileSync(credentialFile, "utf8").trim();

  writeFileSync(join(dir, "data.txt"), INPUT);
  writeFileSync(
    join(dir, "job.yaml"),
    stringify({
      command: `echo one; while [ ! -e ${go} ]; do sleep 0.1; done; echo two; exec sleep 600`,
      inputs: ["data.txt"],
      outputs: ["out.txt"],
    }),
  );
  const submitted = await cli(server, ["submit", join(dir, "job.yaml")]);
  expect(submitted.code, submitted.stderr).toBe(0);
  id = submitted.stdout.trim();
  await waitFor("the job running on owner-host", async () => {
    const attempt = (await getJob(server, id)).tasks[0].attempts[0];
    return attempt?.state === "running" && attempt.host === "owner-host";
  });

  const joined = await hello({ name: "intruder", token: server.joinToken });
  expect(joined.answer.type).toBe("welcome");
  intruderCredential = (joined.answer as Extract<ServerMessage, { type: "welcome" }>).credential ?? "";
  expect(intruderCredential).not.toBe("");
  joined.ws.close();
  otherPoolToken = poolJoinToken(server.joinToken, "elsewhere");
}, 60_000);

afterAll(async () => {
  await owner?.crash();
  await server?.stop();
  cleanup(dir, server?.data ?? "", owner?.work ?? "");
});

async function call(token: string, method: string, path: string, body?: string, type?: string) {
  const response = await fetch(`${server.url}/api/v1/agent/jobs/${path}`, {
    method,
    headers: {
      authorization: `Bearer ${token}`,
      ...(body === undefined ? {} : { "content-type": type ?? "application/octet-stream" }),
    },
    body,
  });
  return { status: response.status, text: await response.text() };
}

const manifest = (text: string) =>
  JSON.stringify({ files: [{ path: "state", sha256: sha(text), bytes: text.length }] });

/** Every agent route on the job's live attempt (1 of task 0), as `job` names it. */
function routes(job: string) {
  return {
    "read an input": ["GET", `${job}/inputs/data.txt`],
    "read the checkpoint": ["GET", `${job}/tasks/0/checkpoint`],
    "read a checkpoint object": ["GET", `${job}/tasks/0/checkpoint/objects/${sha("v1")}`],
    "write an output": ["PUT", `${job}/tasks/0/attempts/1/outputs/out.txt`, "forged output"],
    "write a checkpoint object": ["PUT", `${job}/tasks/0/attempts/1/checkpoint/objects/${sha("v2")}`, "v2"],
    "commit a checkpoint": [
      "POST",
      `${job}/tasks/0/attempts/1/checkpoint`,
      manifest("v1"),
      "application/json",
    ],
  } as const;
}

it("the host running the attempt reads and writes its files with its credential", async () => {
  const as = (method: string, path: string, body?: string, type?: string) =>
    call(ownerCredential, method, path, body, type);
  expect(await as("GET", `${id}/inputs/data.txt`)).toEqual({ status: 200, text: INPUT });
  expect((await as("PUT", `${id}/tasks/0/attempts/1/outputs/out.txt`, "partial")).status).toBe(200);
  expect((await as("PUT", `${id}/tasks/0/attempts/1/checkpoint/objects/${sha("v1")}`, "v1")).status).toBe(
    200,
  );
  const committed = await as(
    "POST",
    `${id}/tasks/0/attempts/1/checkpoint`,
    manifest("v1"),
    "application/json",
  );
  expect(committed.status, committed.text).toBe(200);
  expect(JSON.parse(committed.text)).toMatchObject({ generation: 1 });
  expect(JSON.parse((await as("GET", `${id}/tasks/0/checkpoint`)).text)).toEqual(JSON.parse(manifest("v1")));
  expect(await as("GET", `${id}/tasks/0/checkpoint/objects/${sha("v1")}`)).toEqual({
    status: 200,
    text: "v1",
  });
});

it("another host, a pool's token of another pool and the join token get the 404 of an absent attempt", async () => {
  const wrong: string[] = [];
  for (const [who, token] of [
    ["another joined host", intruderCredential],
    ["a pool token of another pool", otherPoolToken],
    ["the server's join token", server.joinToken],
  ] as const) {
    const absent = routes("999999");
    for (const [what, [method, path, body, type]] of Object.entries(routes(id))) {
      const got = await call(token, method, path, body, type);
      const [absentMethod, absentPath, absentBody, absentType] = absent[what as keyof typeof absent];
      // The answer for a job that does not exist, asked by the host that runs the real one.
      const none = await call(ownerCredential, absentMethod, absentPath, absentBody, absentType);
      if (got.status !== 404 || got.text !== none.text)
        wrong.push(`${what} as ${who}: ${got.status} ${got.text} (absent: ${none.status} ${none.text})`);
    }
  }
  expect(wrong).toEqual([]);
  // Nothing of it landed: the checkpoint is still the owner's first generation.
  const task = (await getJob(server, id)).tasks[0];
  expect(task.checkpoint).toMatchObject({ generation: 1 });
});

it("a pool's token joins its own pool only", async () => {
  const { ws, answer } = await hello({ name: "stray", token: otherPoolToken, pool: "default" });
  ws.close();
  expect(answer).toMatchObject({
    type: "reject",
    reason: "the join token is for pool elsewhere, not default",
  });
});

async function stdout(): Promise<string> {
  const response = await fetch(`${server.url}/api/v1/jobs/${id}/logs?task=0&stream=stdout`, {
    headers: { authorization: `Bearer ${server.token}` },
  });
  return response.text();
}

it("a log message for an attempt another host runs is refused, and the real log goes on", async () => {
  await waitFor("the first line in the log", async () => (await stdout()) === "one\n");
  const { ws, answer } = await hello({ name: "intruder", token: "", credential: intruderCredential });
  expect(answer.type).toBe("welcome");
  const forged = Buffer.from("forged\n").toString("base64");
  const ref = { jobId: id, taskIndex: 0, attempt: 1, stream: "stdout", data: forged };
  // At the end of the log (where an append would land), over its start, and naming rank 0.
  for (const message of [
    { ...ref, offset: 4 },
    { ...ref, offset: 0 },
    { ...ref, offset: 4, rank: 0 },
    { ...ref, offset: 4, rank: 1 },
  ])
    ws.send(JSON.stringify({ type: "log", ...message }));
  // A little time for the appends a server that took them would make.
  await sleep(500);
  ws.close();
  expect(await stdout()).toBe("one\n");
  // The job's own agent appends its next line where it expects to.
  writeFileSync(go, "");
  await waitFor("the second line in the log", async () => (await stdout()) === "one\ntwo\n", 20_000, 200);
}, 60_000);

// Checkpoints across a restart of the server while the attempt runs on (its agent re-attaches):
// the committed parts come back from the store (a restart point read from the state, not from
// blobs), and an object uploaded before the restart may still be named by a commit after it.
// Calls carry the host credential of the agent running the job, as the agent's own do.

import { createHash } from "node:crypto";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  type AgentProcess,
  api,
  cleanup,
  getJob,
  hostCredentialOf,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  waitFor,
} from "../helpers/steward.ts";

let server: StewardProcess & { joinToken: string };
let agent: AgentProcess;
let hostCredential: string;
let id: string;

beforeAll(async () => {
  server = await startServerProcess();
  agent = await startAgentProcess({
    name: "r1",
    slots: 1,
    servers: [server.url],
    joinToken: server.joinToken,
  });
  hostCredential = await hostCredentialOf(agent.work);
  ({ id } = await api(server, "POST", "/api/v1/jobs", { command: "sleep 120" }));
  await waitFor("running", async () => (await getJob(server, id)).tasks[0].attempts[0]?.state === "running");
}, 60_000);

afterAll(async () => {
  await api(server, "POST", `/api/v1/jobs/${id}/cancel`, {}).catch(() => {});
  await agent?.crash();
  await server?.stop();
  cleanup(server?.data ?? "", agent?.work ?? "");
});

const sha = (text: string) => createHash("sha256").update(text).digest("hex");

function agentCall(method: string, path: string, body?: string, type = "application/octet-stream") {
  return fetch(`${server.url}/api/v1/agent/jobs/${id}/tasks/0${path}`, {
    method,
    headers: { authorization: `Bearer ${hostCredential}`, "content-type": type },
    body,
  });
}

const commit = (files: { path: string; sha256: string; bytes: number }[]) =>
  agentCall("POST", "/attempts/1/checkpoint", JSON.stringify({ files }), "application/json");

/** Stops the server and starts it again on its data and port; the attempt runs on meanwhile. */
async function restart(): Promise<void> {
  await server.stop();
  server = await startServerProcess({ data: server.data, port: server.port });
  await waitFor(
    "the agent back, its attempt running",
    async () => {
      const hosts = (await api(server, "GET", "/api/v1/hosts")) as { name: string; connected: boolean }[];
      const job = await getJob(server, id);
      return (
        hosts.some((host) => host.name === "r1" && host.connected) &&
        job.tasks[0].attempts[0].state === "running"
      );
    },
    20_000,
    100,
  );
}

it("keeps the committed checkpoint across a restart, and takes an object uploaded before it", async () => {
  expect((await agentCall("PUT", `/attempts/1/checkpoint/objects/${sha("v1")}`, "v1")).status).toBe(200);
  expect(await (await commit([{ path: "state", sha256: sha("v1"), bytes: 2 }])).json()).toMatchObject({
    generation: 1,
  });
  // Uploaded, not yet committed, when the server goes.
  expect((await agentCall("PUT", `/attempts/1/checkpoint/objects/${sha("v2")}`, "v2")).status).toBe(200);

  await restart();
  expect(await (await agentCall("GET", "/checkpoint")).json()).toEqual({
    files: [{ path: "state", sha256: sha("v1"), bytes: 2 }],
  });
  const second = await commit([{ path: "state", sha256: sha("v2"), bytes: 2 }]);
  expect(second.status).toBe(200);
  expect(await second.json()).toMatchObject({ generation: 2, previous: 1 });
  expect((await agentCall("GET", `/checkpoint/objects/${sha("v1")}`)).status).toBe(404);

  await restart();
  expect(await (await agentCall("GET", "/checkpoint")).json()).toEqual({
    files: [{ path: "state", sha256: sha("v2"), bytes: 2 }],
  });
  expect(await (await agentCall("GET", `/checkpoint/objects/${sha("v2")}`)).text()).toBe("v2");
  // The next generation follows the one recovered.
  expect((await agentCall("PUT", `/attempts/1/checkpoint/objects/${sha("v3")}`, "v3")).status).toBe(200);
  expect(await (await commit([{ path: "state", sha256: sha("v3"), bytes: 2 }])).json()).toMatchObject({
    generation: 3,
    previous: 2,
  });
}, 90_000);

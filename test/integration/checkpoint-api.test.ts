// The checkpoint routes agents use: objects are checked against their names, a manifest commits
// only when every object is there, only the current attempt may commit, and the last generation
// alone is kept. Calls carry the host credential of the agent running the job, as the agent's own do.

import { createHash } from "node:crypto";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  api,
  cleanup,
  getJob,
  hostCredentialOf,
  type StewardProcess,
  startUp,
  waitFor,
} from "../helpers/steward.ts";

let steward: StewardProcess;
let hostCredential: string;
let id: string;

beforeAll(async () => {
  steward = await startUp({ agents: 1, slots: 1 });
  hostCredential = await hostCredentialOf(join(steward.data, "agents", "local-1"));
  ({ id } = await api(steward, "POST", "/api/v1/jobs", { command: "sleep 60" }));
  await waitFor("running", async () => (await getJob(steward, id)).tasks[0].attempts[0]?.state === "running");
});

afterAll(async () => {
  await api(steward, "POST", `/api/v1/jobs/${id}/cancel`, {}).catch(() => {});
  await steward?.stop();
  cleanup(steward?.data);
});

const sha = (text: string) => createHash("sha256").update(text).digest("hex");

function agentCall(method: string, path: string, body?: string, type = "application/octet-stream") {
  return fetch(`${steward.url}/api/v1/agent/jobs/${id}/tasks/0${path}`, {
    method,
    headers: { authorization: `Bearer ${hostCredential}`, "content-type": type },
    body,
  });
}

const commit = (attempt: number, files: { path: string; sha256: string; bytes: number }[]) =>
  agentCall("POST", `/attempts/${attempt}/checkpoint`, JSON.stringify({ files }), "application/json");

it("refuses an object whose content does not match its name", async () => {
  const response = await agentCall("PUT", `/attempts/1/checkpoint/objects/${sha("right")}`, "wrong");
  expect(response.status).toBe(400);
  expect((await agentCall("GET", `/checkpoint/objects/${sha("right")}`)).status).toBe(404);
});

it("commits a manifest only when its objects are uploaded, and only from the current attempt", async () => {
  const missing = await commit(1, [{ path: "state", sha256: sha("v1"), bytes: 2 }]);
  expect(missing.status).toBe(409);
  expect((await agentCall("GET", "/checkpoint")).status).toBe(404);

  expect((await agentCall("PUT", `/attempts/1/checkpoint/objects/${sha("v1")}`, "v1")).status).toBe(200);
  // An attempt this host does not run (here: none) is not found.
  const stale = await commit(2, [{ path: "state", sha256: sha("v1"), bytes: 2 }]);
  expect(stale.status).toBe(404);
  const first = await commit(1, [{ path: "state", sha256: sha("v1"), bytes: 2 }]);
  expect(await first.json()).toMatchObject({ generation: 1, bytes: 2 });

  // An object uploaded without a commit (a partial checkpoint) is never what a restart gets.
  expect((await agentCall("PUT", `/attempts/1/checkpoint/objects/${sha("v2")}`, "v2")).status).toBe(200);
  expect(await (await agentCall("GET", "/checkpoint")).json()).toEqual({
    files: [{ path: "state", sha256: sha("v1"), bytes: 2 }],
  });

  const second = await commit(1, [{ path: "state", sha256: sha("v2"), bytes: 2 }]);
  expect(await second.json()).toMatchObject({ generation: 2, previous: 1 });
  expect(await (await agentCall("GET", `/checkpoint/objects/${sha("v2")}`)).text()).toBe("v2");
  // The older generation's object is dropped.
  expect((await agentCall("GET", `/checkpoint/objects/${sha("v1")}`)).status).toBe(404);
  const job = (await api(steward, "GET", `/api/v1/jobs/${id}`)) as { tasks: { checkpoint: unknown }[] };
  expect(job.tasks[0].checkpoint).toMatchObject({ generation: 2, bytes: 2 });
});

it("refuses agent routes without a join token or host credential", async () => {
  const response = await fetch(`${steward.url}/api/v1/agent/jobs/${id}/tasks/0/checkpoint`, {
    headers: { authorization: `Bearer ${steward.token}` },
  });
  expect(response.status).toBe(401);
});

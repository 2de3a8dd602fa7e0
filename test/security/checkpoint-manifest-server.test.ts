// Issue 22, item 2: a checkpoint manifest names the files an agent writes, as root on a run-as
// host, when a task restarts. The server commits one only when every path in it is relative,
// normalised, inside its folder, free of NUL, of bounded length and named once; otherwise it
// answers 400 naming the path, and nothing is committed.

import { createHash } from "node:crypto";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
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
/** The agent's host credential: the agent routes serve the attempts of its host only. */
let hostCredential: string;
let id: string;

const sha = (text: string) => createHash("sha256").update(text).digest("hex");
const STATE = { sha256: sha("state"), bytes: 5 };

beforeAll(async () => {
  steward = await startUp({ agents: 1, slots: 1 });
  hostCredential = await hostCredentialOf(join(steward.data, "agents", "local-1"));
  ({ id } = await api(steward, "POST", "/api/v1/jobs", { command: "sleep 60" }));
  await waitFor("running", async () => (await getJob(steward, id)).tasks[0].attempts[0]?.state === "running");
  const upload = await agentCall("PUT", `/attempts/1/checkpoint/objects/${STATE.sha256}`, "state");
  expect(upload.status).toBe(200);
});

afterAll(async () => {
  await api(steward, "POST", `/api/v1/jobs/${id}/cancel`, {}).catch(() => {});
  await steward?.stop();
  cleanup(steward?.data);
});

function agentCall(method: string, path: string, body?: string, type = "application/octet-stream") {
  return fetch(`${steward.url}/api/v1/agent/jobs/${id}/tasks/0${path}`, {
    method,
    headers: { authorization: `Bearer ${hostCredential}`, "content-type": type },
    body,
  });
}

async function commit(paths: string[]): Promise<{ status: number; message: string }> {
  const files = paths.map((path) => ({ path, ...STATE }));
  const response = await agentCall(
    "POST",
    "/attempts/1/checkpoint",
    JSON.stringify({ files }),
    "application/json",
  );
  const body = (await response.json()) as { error?: { message: string } };
  return { status: response.status, message: body.error?.message ?? "" };
}

describe("the server refuses a checkpoint manifest whose paths could leave the folder", () => {
  const refused: [string, string[], string][] = [
    ["a path up and out", ["../../../../etc/cron.d/x"], "files[0].path"],
    ["a path that goes up in the middle", ["a/../../x"], "files[0].path"],
    ["an absolute path", ["/etc/cron.d/x"], "files[0].path"],
    ["a NUL", ["state\0.x"], "files[0].path"],
    ["a path named twice", ["state", "state"], "files[1].path"],
    ["a path not in its normal form", ["a/./state"], "files[0].path"],
    ["an empty component", ["a//state"], "files[0].path"],
    ["a name longer than a file system allows", [`${"n".repeat(256)}`], "files[0].path"],
    [
      "a path longer than a file system allows",
      [Array.from({ length: 50 }, () => "d".repeat(100)).join("/")],
      "files[0].path",
    ],
    ["a path that is both a file and a folder", ["a", "a/state"], "files[1].path"],
  ];
  for (const [what, paths, field] of refused) {
    it(`refuses ${what}, naming it`, async () => {
      const { status, message } = await commit(paths);
      expect(status).toBe(400);
      expect(message).toContain(field);
      const named = paths[Number(/\[(\d+)\]/.exec(field)?.[1])];
      expect(message).toContain(JSON.stringify(named).slice(0, 40));
      // Nothing was committed: a restart has no checkpoint to take.
      expect((await agentCall("GET", "/checkpoint")).status).toBe(404);
    });
  }

  it("commits a manifest of plain relative paths (so the refusals above are about the paths)", async () => {
    const { status } = await commit(["state", "sub/dir/state"]);
    expect(status).toBe(200);
    const manifest = (await (await agentCall("GET", "/checkpoint")).json()) as { files: { path: string }[] };
    expect(manifest.files.map((file) => file.path)).toEqual(["state", "sub/dir/state"]);
  });
});

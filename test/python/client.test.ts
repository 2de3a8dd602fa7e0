// The Python client (python/steward) against a real server and agent: every call, the errors with
// the API's messages, and an event stream that resumes across a restart of the server without
// missing or repeating an event.

import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import {
  type AgentProcess,
  api,
  cleanup,
  getJob,
  ROOT,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
} from "../helpers/steward.ts";
import { describePython, runPython, SCRIPTS, startPython } from "./python.ts";

let server: StewardProcess & { joinToken: string };
let agent: AgentProcess;
const work = tempDir("steward-python-");

describePython("the Python client", () => {
  beforeAll(async () => {
    // One submit a second for a user's token, so that the client meets a 429.
    server = await startServerProcess({ args: ["--submit-rate", "1", "--submit-burst", "1"] });
    agent = await startAgentProcess({
      name: "p1",
      slots: 4,
      servers: [server.url],
      joinToken: server.joinToken,
    });
    await waitFor("p1 up", async () => (await api(server, "GET", "/api/v1/hosts")).length === 1);
  });

  afterAll(async () => {
    await agent?.crash();
    await server?.stop();
    cleanup(work, agent?.work ?? "", server?.data ?? "");
  });

  it("makes every call against a real server", async () => {
    const user = await api(server, "POST", "/api/v1/tokens", { user: "pyuser", role: "user" });
    const reader = await api(server, "POST", "/api/v1/tokens", { user: "pyreader", role: "reader" });
    const run = await runPython([join(SCRIPTS, "client_calls.py")], {
      STEWARD_URL: server.url,
      STEWARD_TOKEN: server.token,
      USER_TOKEN: user.token,
      READER_TOKEN: reader.token,
      WORK: work,
      EXAMPLES: join(ROOT, "examples"),
    });
    expect(run.stderr + run.stdout).toContain("all done");
    expect(run.code).toBe(0);
  }, 120_000);

  it("follows events across a restart of the server, resuming with Last-Event-ID", async () => {
    const { id } = await api(server, "POST", "/api/v1/jobs", {
      name: "across",
      command: "echo begun; sleep 4; echo ended",
    });
    const follower = startPython(
      [
        "-c",
        [
          "import json, os, steward",
          "client = steward.Client.from_env()",
          "for event in client.events(after=0, job=os.environ['JOB']):",
          "    print(json.dumps(event), flush=True)",
          "    if event['kind'] == 'state' and event['data']['to'] == 'succeeded': break",
        ].join("\n"),
      ],
      { STEWARD_URL: server.url, STEWARD_TOKEN: server.token, JOB: id },
    );
    const printed = () =>
      follower
        .stdout()
        .split("\n")
        .filter(Boolean)
        .map((line) => JSON.parse(line) as { id: number; kind: string });
    await waitFor("the job's first events", () => printed().some((event) => event.kind === "attempt.placed"));
    // The same server again, same port and data: the stream drops, the client comes back.
    const { data, port } = server;
    await server.stop();
    server = await startServerProcess({ data, port, args: ["--submit-rate", "1", "--submit-burst", "1"] });
    const run = await follower.done;
    expect(run.code, run.stderr).toBe(0);
    const stored = (await getJob(server, id)).events.map((event) => event.id);
    expect(printed().map((event) => event.id)).toEqual(stored);
  }, 60_000);
});

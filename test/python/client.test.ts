// The Python client (python/steward) against a real server and agent: every call, the errors with
// the API's messages, and an event stream that resumes across a restart of the server without
// missing or repeating an event.

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { ErrorAnswer } from "../../src/common/api/errors.ts";
import type { Host } from "../../src/common/api/hosts.ts";
import type { Job } from "../../src/common/api/jobs.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  getJob,
  ROOT,
  type StewardProcess,
  startAgentProcess,
  startAttachedAgent,
  startServerProcess,
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";
import { describePython, runPython, SCRIPTS, startPython } from "./python.ts";

let server: StewardProcess & { joinToken: string };
let agent: AgentProcess;
const work = tempDir("steward-python-");

describePython("the Python client", () => {
  beforeAll(async () => {
    // One submit a second for a user's token, so that the client meets a 429.
    server = await startServerProcess({ args: ["--submit-rate", "1", "--submit-burst", "1"] });
    agent = await startAttachedAgent(server, "p1", 4);
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

  it("reads a job file for a client without a YAML parser: a dry run, and a multipart job field as YAML", async () => {
    const headers = { authorization: `Bearer ${server.token}` };
    const before = (await api(server, "GET", "/api/v1/jobs?all=1")).length;
    const yaml = "name: staged\ncommand: cat data.txt\ninputs: [data.txt]\n";
    const dry = await fetch(`${server.url}/api/v1/jobs?dryRun=1`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/yaml" },
      body: yaml,
    });
    expect(dry.status).toBe(200);
    const { spec } = (await dry.json()) as { spec: Record<string, unknown> };
    expect(spec).toMatchObject({ name: "staged", inputs: ["data.txt"], retry: { maxAttempts: 1 } });
    const bad = await fetch(`${server.url}/api/v1/jobs?dryRun=1`, {
      method: "POST",
      headers: { ...headers, "content-type": "application/yaml" },
      body: "name: x\ncommand: echo\nrank: [1\n",
    });
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as ErrorAnswer).error.message).toMatch(/not valid YAML or JSON/);
    const form = new FormData();
    form.set("job", yaml);
    form.append("data.txt", new Blob(["staged bytes\n"]), "data.txt");
    const dryMultipart = await fetch(`${server.url}/api/v1/jobs?dryRun=1`, {
      method: "POST",
      headers,
      body: form,
    });
    expect(dryMultipart.status).toBe(400);
    expect(((await dryMultipart.json()) as ErrorAnswer).error.field).toBe("dryRun");
    // A dry run made nothing.
    expect((await api(server, "GET", "/api/v1/jobs?all=1")).length).toBe(before);
    const submitted = await fetch(`${server.url}/api/v1/jobs`, { method: "POST", headers, body: form });
    expect(submitted.status).toBe(201);
    const job = (await submitted.json()) as Job;
    expect(job.spec.inputs).toEqual(["data.txt"]);
    const ended = await waitForJobEnd(server, job.id);
    expect(ended.state).toBe("succeeded");
    const neither = new FormData();
    neither.set("job", "name: [unclosed\n");
    const refused = await fetch(`${server.url}/api/v1/jobs`, { method: "POST", headers, body: neither });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as ErrorAnswer).error).toMatchObject({
      field: "job",
      message: expect.stringMatching(/^job: not valid YAML or JSON: /),
    });
  });

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

  it("submits a job run in place (workdir) as it is, as a dict and as YAML text, uploading nothing", async () => {
    const shared = join(work, "shared");
    mkdirSync(join(shared, "run"), { recursive: true });
    writeFileSync(join(shared, "run", "mesh"), "7\n");
    const sharing = await startAgentProcess({
      name: "p-shared",
      slots: 2,
      servers: [server.url],
      joinToken: server.joinToken,
      args: ["--shared", shared],
    });
    try {
      await waitFor("the sharing agent attached", async () =>
        ((await api(server, "GET", "/api/v1/hosts")) as Host[]).some(
          (host) => host.name === "p-shared" && host.connected,
        ),
      );
      const run = await runPython(
        [
          "-c",
          [
            "import os, steward",
            "client = steward.Client.from_env()",
            "folder = os.path.join(os.environ['SHARED'], 'run')",
            "as_dict = client.submit({'command': 'read n < mesh; echo $((n * 6)) > answer', 'workdir': folder})",
            "job = client.wait(as_dict, timeout=60)",
            "assert job['state'] == 'succeeded', job['state']",
            "assert job['spec']['workdir'] == folder and job['spec']['inputs'] == [], job['spec']",
            "assert client.fetch(as_dict, dest=os.environ['FETCHED']) == []",
            "as_text = client.submit('command: pwd > where\\nworkdir: ' + folder + '\\n')",
            "assert client.wait(as_text, timeout=60)['state'] == 'succeeded'",
            "try:",
            "    client.submit({'command': 'true', 'workdir': folder, 'inputs': ['mesh']}, base_dir=folder)",
            "    raise AssertionError('inputs beside a workdir were taken')",
            "except steward.Invalid as error:",
            "    assert error.field == 'inputs', error.field",
            "print('in place')",
          ].join("\n"),
        ],
        {
          STEWARD_URL: server.url,
          STEWARD_TOKEN: server.token,
          SHARED: shared,
          FETCHED: join(work, "fetched"),
        },
      );
      expect(run.stdout + run.stderr).toContain("in place");
      expect(run.code).toBe(0);
      expect(readFileSync(join(shared, "run", "answer"), "utf8")).toBe("42\n");
      expect(readFileSync(join(shared, "run", "where"), "utf8")).toBe(`${join(shared, "run")}\n`);
    } finally {
      await sharing.crash();
      cleanup(sharing.work);
    }
  }, 120_000);
});

// `steward up` end to end with real processes: a job with an input and an output, logs, fetch,
// a failing job, an array, cancel, and the CLI's errors.

import { spawn } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  api,
  cleanup,
  cli,
  freePort,
  type StewardProcess,
  startUp,
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

let steward: StewardProcess;
let work: string;

beforeAll(async () => {
  steward = await startUp({ agents: 2, slots: 2 });
  work = tempDir("steward-jobs-");
});

afterAll(async () => {
  await steward?.stop();
  cleanup(steward?.data, work);
});

function jobFile(name: string, content: string, files: Record<string, string> = {}): string {
  const folder = join(work, name);
  mkdirSync(folder, { recursive: true });
  for (const [path, text] of Object.entries(files)) writeFileSync(join(folder, path), text);
  const path = join(folder, "job.yaml");
  writeFileSync(path, content);
  return path;
}

describe("steward up", () => {
  it("runs a job with an input and an output; logs and fetch return them", async () => {
    const file = jobFile(
      "sum",
      [
        "name: sum",
        `command: "echo summing; awk '{s+=$1} END {print s}' numbers > total; echo done"`,
        "inputs: [numbers]",
        "outputs: [total]",
      ].join("\n"),
      { numbers: "1\n2\n3\n4\n" },
    );
    const submitted = await cli(steward, ["submit", file]);
    expect(submitted.code).toBe(0);
    const id = submitted.stdout.trim();
    expect(id).toMatch(/^\d+$/);
    expect((await cli(steward, ["wait", id, "--timeout", "30"])).code).toBe(0);
    const logs = await cli(steward, ["logs", id]);
    expect(logs.stdout).toBe("summing\ndone\n");
    const out = join(work, "sum-out");
    const fetched = await cli(steward, ["fetch", id, "--to", out, "--json"]);
    expect(fetched.code).toBe(0);
    expect(JSON.parse(fetched.stdout)).toEqual([
      { task: 0, path: "total", bytes: 3, file: join(out, "total") },
    ]);
    expect(readFileSync(join(out, "total"), "utf8")).toBe("10\n");
    const job = JSON.parse((await cli(steward, ["show", id, "--json"])).stdout);
    expect(job).toMatchObject({ id, name: "sum", state: "succeeded", counts: { succeeded: 1 } });
    expect(job.tasks[0].attempts).toHaveLength(1);
    expect(job.tasks[0].attempts[0]).toMatchObject({
      number: 1,
      state: "ended",
      outcome: "succeeded",
      exitCode: 0,
    });
    expect(job.tasks[0].attempts[0].host).toMatch(/^local-[12]$/);
    expect(job.events.map((event: { kind: string }) => event.kind)).toContain("submitted");
  });

  it("records exit code 3 as a failure, and wait exits 1", async () => {
    const file = jobFile("fail", `command: "echo broken >&2; exit 3"\n`);
    const submitted = await cli(steward, ["submit", file, "--wait"]);
    expect(submitted.code).toBe(1);
    const id = submitted.stdout.trim();
    expect((await cli(steward, ["wait", id])).code).toBe(1);
    const job = JSON.parse((await cli(steward, ["show", id, "--json"])).stdout);
    expect(job.state).toBe("failed");
    expect(job.tasks[0].attempts[0]).toMatchObject({ outcome: "failed", exitCode: 3 });
    expect((await cli(steward, ["logs", id, "--stderr"])).stdout).toBe("broken\n");
  });

  it("gives each array task its index and fetches into DIR/<index>/<path>", async () => {
    const file = jobFile(
      "array",
      `command: "echo $STEWARD_TASK_INDEX $STEWARD_ATTEMPT $STEWARD_RESTARTED $STEWARD_JOB_ID > out.txt"\noutputs: [out.txt]\narray: {count: 6}\n`,
    );
    const id = (await cli(steward, ["submit", file])).stdout.trim();
    expect((await cli(steward, ["wait", id, "--timeout", "60"])).code).toBe(0);
    const out = join(work, "array-out");
    await cli(steward, ["fetch", id, "--to", out]);
    for (let index = 0; index < 6; index++) {
      expect(readFileSync(join(out, String(index), "out.txt"), "utf8")).toBe(`${index} 1 0 ${id}\n`);
    }
    const submitAnswer = await api(steward, "POST", "/api/v1/jobs", { command: "true", array: { count: 3 } });
    expect(submitAnswer.tasks).toBeUndefined();
    const removed = await cli(steward, ["rm", id, "--json"]);
    expect(JSON.parse(removed.stdout)).toEqual({ id, removed: true });
    expect((await cli(steward, ["show", id])).code).toBe(3);
  });

  it("follows a running attempt's output with logs -f", async () => {
    const file = jobFile("follow", `command: "for i in 1 2 3 4; do echo line $i; sleep 0.7; done"\n`);
    const id = (await cli(steward, ["submit", file])).stdout.trim();
    const follower = spawn(join(import.meta.dirname, "../../bin/steward"), ["logs", id, "-f"], {
      env: { ...process.env, STEWARD_URL: steward.url, STEWARD_TOKEN: steward.token },
    });
    let seen = "";
    follower.stdout.on("data", (chunk) => {
      seen += chunk;
    });
    const exited = new Promise<number | null>((done) => follower.once("exit", (code) => done(code)));
    await waitFor("first line", () => seen.includes("line 1"), 10_000);
    const stateWhenFirstSeen = (await api(steward, "GET", `/api/v1/jobs/${id}?tasks=0&events=0`)).state;
    expect(stateWhenFirstSeen).toBe("running");
    expect(await exited).toBe(0);
    expect(seen).toBe("line 1\nline 2\nline 3\nline 4\n");
  });

  it("cancels a running job and kills its whole process group", async () => {
    const marker = join(work, "cancel-marker");
    const file = jobFile("cancel", `command: "sleep 30 & echo $! > ${marker}; wait"\n`);
    const id = (await cli(steward, ["submit", file])).stdout.trim();
    const pid = Number(
      await waitFor("child pid", () => existsSync(marker) && readFileSync(marker, "utf8").trim()),
    );
    expect((await cli(steward, ["cancel", id])).code).toBe(0);
    expect((await cli(steward, ["wait", id, "--timeout", "20"])).code).toBe(1);
    const job = await api(steward, "GET", `/api/v1/jobs/${id}`);
    expect(job.state).toBe("cancelled");
    expect(job.tasks[0].attempts[0].outcome).toBe("cancelled");
    await waitFor("background child killed", () => !processAlive(pid), 10_000);
  });

  it("says how a job ended: its own exit code, even above 128+31, or the signal that killed it", async () => {
    const cases: [string, string][] = [
      ["exit 3", "exit code 3"],
      ["exit 254", "exit code 254"],
      ["kill -TERM $$", "killed by signal 15"],
    ];
    for (const [command, reason] of cases) {
      const { id } = await api(steward, "POST", "/api/v1/jobs", { command });
      const job = await waitForJobEnd(steward, id, 30_000);
      expect(job.state, command).toBe("failed");
      expect(job.tasks[0].attempts[0].reason, command).toBe(reason);
    }
  });

  it("rejects five kinds of bad job file, naming the field, and creates nothing", async () => {
    const before = (await api(steward, "GET", "/api/v1/jobs?all=1")).length;
    const cases: [string, string, Record<string, string>, string][] = [
      ["unknown-key", `command: "true"\nresources: {cpus: 1, tpus: 2}\n`, {}, "resources.tpus"],
      ["wrong-type", `command: "true"\npriority: "high"\n`, {}, "priority"],
      ["missing-input", `command: "true"\ninputs: [here, absent]\n`, { here: "x" }, "inputs[1]"],
      ["escaping-path", `command: "true"\noutputs: [ok, ../../etc/passwd]\n`, {}, "outputs[1]"],
      ["bad-cel", `command: "true"\nrequirements: 'host.arch == '\n`, {}, "requirements"],
      ["unknown-fact", `command: "true"\nrequirements: 'host.gpus > 0.0'\n`, {}, "requirements"],
    ];
    for (const [name, content, files, field] of cases) {
      const result = await cli(steward, ["submit", jobFile(`bad-${name}`, content, files)]);
      expect(result.code, name).not.toBe(0);
      expect(result.stderr, name).toContain(field);
      expect(result.stdout, name).toBe("");
    }
    // The server refuses the same on its own, for clients other than the CLI.
    const rejected: [unknown, string][] = [
      [{ command: "true", bogus: 1 }, "bogus"],
      [{ command: 5 }, "command"],
      [{ command: "true", inputs: ["x"] }, "inputs[0]"],
      [{ command: "true", outputs: ["/abs"] }, "outputs[0]"],
      [{ command: "true", rank: "host.name +" }, "rank"],
    ];
    for (const [body, field] of rejected) {
      const error = await api(steward, "POST", "/api/v1/jobs", body).catch((e) => e);
      expect(error.status).toBe(400);
      expect(error.body.error.field).toBe(field);
    }
    expect((await api(steward, "GET", "/api/v1/jobs?all=1")).length).toBe(before);
  });

  it("reports clear errors: unknown job, wrong token, no server", async () => {
    const unknown = await cli(steward, ["show", "999999"]);
    expect(unknown.code).toBe(3);
    expect(unknown.stderr).toContain("no job 999999");
    const badToken = await cli({ url: steward.url, token: "wrong" }, ["ps"]);
    expect(badToken.code).toBe(3);
    expect(badToken.stderr).toContain("token");
    const port = await freePort();
    const noServer = await cli({ url: `http://127.0.0.1:${port}`, token: "x" }, ["ps"]);
    expect(noServer.code).toBe(3);
    expect(noServer.stderr).toContain("cannot reach");
  });

  it("runs a job after the jobs it depends on, and cancels it, naming the dependency, when one of them fails", async () => {
    const first = await api(steward, "POST", "/api/v1/jobs", { command: "sleep 1" });
    const after = await api(steward, "POST", "/api/v1/jobs", { command: "true", dependsOn: [first.id] });
    expect(after.state).toBe("waiting");
    expect((await cli(steward, ["wait", after.id, "--timeout", "30"])).code).toBe(0);
    const [a, b] = [
      await api(steward, "GET", `/api/v1/jobs/${first.id}`),
      await api(steward, "GET", `/api/v1/jobs/${after.id}`),
    ];
    expect(Date.parse(b.tasks[0].attempts[0].startedAt)).toBeGreaterThanOrEqual(Date.parse(a.endedAt));

    const broken = await api(steward, "POST", "/api/v1/jobs", { command: "exit 1" });
    const orphan = await api(steward, "POST", "/api/v1/jobs", { command: "true", dependsOn: [broken.id] });
    expect((await cli(steward, ["wait", orphan.id, "--timeout", "30"])).code).toBe(1);
    const ended = await api(steward, "GET", `/api/v1/jobs/${orphan.id}`);
    expect(ended.state).toBe("cancelled");
    expect(ended.tasks[0].attempts).toEqual([]);
    expect(ended.events.map((event: { message: string }) => event.message).join("\n")).toContain(
      `dependency ${broken.id} ended failed`,
    );
    const unknown = await api(steward, "POST", "/api/v1/jobs", {
      command: "true",
      dependsOn: ["424242"],
    }).catch((e) => e);
    expect(unknown.status).toBe(400);
    expect(unknown.body.error.field).toBe("dependsOn[0]");
  });

  it("holds a pending job until it is released", async () => {
    const { id } = await api(steward, "POST", "/api/v1/jobs", {
      command: "true",
      requirements: 'host.name == "nowhere"',
    });
    expect((await cli(steward, ["hold", id])).stdout).toBe(`job ${id}: held\n`);
    const whileHeld = await cli(steward, ["explain", id]);
    expect(whileHeld.stdout).toContain("held by a user");
    expect((await cli(steward, ["release", id])).stdout).toBe(`job ${id}: pending\n`);
    const explained = JSON.parse((await cli(steward, ["explain", id, "--json"])).stdout);
    expect(explained.reasons).toEqual([]);
    expect(explained.hosts).toEqual([
      { host: "local-1", eligible: false, reason: "requirements are false on this host" },
      { host: "local-2", eligible: false, reason: "requirements are false on this host" },
    ]);
    expect((await cli(steward, ["cancel", id])).code).toBe(0);
  });

  it("streams job events as server-sent events", async () => {
    const controller = new AbortController();
    const response = await fetch(`${steward.url}/api/v1/events`, {
      headers: { authorization: `Bearer ${steward.token}` },
      signal: controller.signal,
    });
    expect(response.headers.get("content-type")).toContain("text/event-stream");
    const reader = response.body!.getReader();
    const { id } = await api(steward, "POST", "/api/v1/jobs", { command: "true" });
    let text = "";
    while (!text.includes("-> succeeded")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    controller.abort();
    const events = text
      .split("\n\n")
      .filter((block) => block.startsWith("event: job"))
      .map((block) => JSON.parse(block.split("data: ")[1]));
    expect(events.filter((event) => event.jobId === id).map((event) => event.kind)).toEqual(
      expect.arrayContaining(["submitted", "state"]),
    );
  });

  it("has --help on every command", async () => {
    const commands = [
      "up",
      "server",
      "agent",
      "submit",
      "ps",
      "show",
      "logs",
      "wait",
      "cancel",
      "hold",
      "release",
    ];
    for (const command of [...commands, "migrate", "fetch", "hosts", "drain", "undrain", "explain", "rm"]) {
      const result = await cli(null, [command, "--help"]);
      expect(result.code, command).toBe(0);
      expect(result.stdout, command).toContain("Usage: steward");
    }
  });

  it("answers health, OpenAPI and metrics", async () => {
    // The health shape: {ok, role, leader, term}; a single server leads from its start.
    expect(await (await fetch(`${steward.url}/healthz`)).json()).toEqual({
      ok: true,
      role: "leader",
      leader: steward.url,
      term: 1,
    });
    const openapi = (await (await fetch(`${steward.url}/api/v1/openapi.json`)).json()) as { paths: object };
    expect(Object.keys(openapi.paths)).toContain("/api/v1/jobs");
    // /metrics takes a token of any role (test/security/metrics.test.ts).
    const metrics = await (
      await fetch(`${steward.url}/metrics`, { headers: { authorization: `Bearer ${steward.token}` } })
    ).text();
    expect(metrics).toContain("steward_jobs_submitted_total");
    expect((await fetch(`${steward.url}/api/v1/jobs`)).status).toBe(401);
  });
});

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

// Arrays with real processes: a server and one agent of 6 slots on loopback. A throttled array
// never has more tasks running than its `parallel` (read from its attempts' start and end times)
// and finishes; `steward update --parallel` lets more run at once; a parameters file's lines reach
// their tasks (STEWARD_TASK_PARAM, `${param}` in the command and env), the count following the
// file; mapping parameters give STEWARD_PARAM_<KEY>; a count that does not match is refused.
// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${param}` is the job file's placeholder

import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  type AgentProcess,
  api,
  cleanup,
  cli,
  getJob,
  type JobJson,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

let server: StewardProcess & { joinToken: string };
let agent: AgentProcess;
let folder: string;

beforeAll(async () => {
  server = await startServerProcess();
  agent = await startAgentProcess({
    name: "wide",
    slots: 6,
    servers: [server.url],
    joinToken: server.joinToken,
  });
  await waitFor("agent attached", async () => {
    const hosts = (await api(server, "GET", "/api/v1/hosts")) as { name: string; connected: boolean }[];
    return hosts.some((host) => host.name === "wide" && host.connected);
  });
  folder = mkdtempSync(join(tmpdir(), "steward-arrays-"));
}, 60_000);

afterAll(async () => {
  await agent?.stop();
  await server?.stop();
  cleanup(server?.data ?? "", agent?.work ?? "", folder ?? "");
});

/** The most attempts of the job live at one instant, from their start and end times. */
function mostAtOnce(job: JobJson): number {
  const edges: [number, number][] = [];
  for (const task of job.tasks)
    for (const attempt of task.attempts) {
      const start = Date.parse(attempt.startedAt);
      expect(attempt.endedAt).not.toBeNull();
      edges.push([start, 1], [Date.parse(attempt.endedAt ?? ""), -1]);
    }
  // An end and a start at the same millisecond: the end first (the slot was freed, then taken).
  edges.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let live = 0;
  let most = 0;
  for (const [, step] of edges) {
    live += step;
    most = Math.max(most, live);
  }
  return most;
}

async function submit(spec: Record<string, unknown>): Promise<string> {
  const { id } = (await api(server, "POST", "/api/v1/jobs", spec)) as { id: string };
  return id;
}

describe("an array's throttle", () => {
  it("runs at most `parallel` of 20 tasks at once, and finishes", async () => {
    const id = await submit({ command: "sleep 0.3", array: { count: 20, parallel: 3 } });
    const explained = await waitFor("explain to name the throttle", async () => {
      const out = await cli(server, ["explain", id]);
      return out.stdout.includes("the most its array allows at once (parallel: 3)") ? out.stdout : null;
    });
    expect(explained).toMatch(/\d of its tasks run/);
    const job = await waitForJobEnd(server, id, 90_000);
    expect(job.state).toBe("succeeded");
    expect(job.counts.succeeded).toBe(20);
    expect(mostAtOnce(job)).toBe(3);
  }, 120_000);

  it("lets more run at once after steward update --parallel", async () => {
    const id = await submit({ command: "sleep 1", array: { count: 12, parallel: 1 } });
    await waitFor("a task to run", async () => (await getJob(server, id)).counts.running > 0);
    const raisedAt = Date.now();
    const updated = await cli(server, ["update", id, "--parallel", "4"]);
    expect(updated.code).toBe(0);
    expect(updated.stdout).toContain("parallel 4");
    const job = await waitForJobEnd(server, id, 90_000);
    expect(job.state).toBe("succeeded");
    expect(job.spec.array).toMatchObject({ count: 12, parallel: 4 });
    // Before: one at a time; after: four (the agent has six slots).
    const startedBefore = job.tasks
      .flatMap((task) => task.attempts)
      .filter((a) => Date.parse(a.startedAt) < raisedAt);
    expect(startedBefore).toHaveLength(1);
    expect(mostAtOnce(job)).toBe(4);
    expect(job.events.some((event) => event.message.includes("array.parallel 1 -> 4"))).toBe(true);
  }, 120_000);
});

describe("steward run --parallel", () => {
  it("sets an array's throttle, and is refused without --array", async () => {
    const ran = await cli(server, ["run", "--array", "4", "--parallel", "2", "--detach", "--", "true"]);
    expect(ran.code, ran.stderr).toBe(0);
    const job = await waitForJobEnd(server, ran.stdout.trim(), 60_000);
    expect(job.spec.array).toEqual({ count: 4, parallel: 2 });
    expect(job.state).toBe("succeeded");
    const alone = await cli(server, ["run", "--parallel", "2", "--", "true"]);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toContain("--parallel needs --array N");
  }, 60_000);
});

describe("an array's parameters", () => {
  it("gives each task its line of a parameters file, in STEWARD_TASK_PARAM and ${param}", async () => {
    const lines = ["alpha", "beta gamma", "delta", "eps'ilon", "zeta"];
    writeFileSync(join(folder, "cases.txt"), `${lines.join("\n")}\n`);
    writeFileSync(
      join(folder, "job.yaml"),
      [
        'command: \'printf "%s|%s|%s\\n" "$STEWARD_TASK_PARAM" "$CASE" "$STEWARD_TASK_INDEX" > out.txt\'',
        "env: {CASE: 'case-${param}'}",
        "inputs: [cases.txt]",
        "outputs: [out.txt]",
        "array: {paramsFile: cases.txt, parallel: 2}",
        "",
      ].join("\n"),
    );
    const dry = await cli(server, ["submit", "--dry-run", join(folder, "job.yaml")]);
    expect(dry.stdout).toContain("job.yaml is valid (a task per line of cases.txt)");
    const submitted = await cli(server, ["submit", join(folder, "job.yaml")]);
    expect(submitted.code, submitted.stderr).toBe(0);
    const id = submitted.stdout.trim();
    const job = await waitForJobEnd(server, id, 60_000);
    expect(job.state).toBe("succeeded");
    expect(job.taskCount).toBe(5);
    const to = join(folder, "fetched");
    expect((await cli(server, ["fetch", id, "--to", to])).code).toBe(0);
    lines.forEach((line, index) => {
      expect(readFileSync(join(to, String(index), "out.txt"), "utf8")).toBe(
        `${line}|case-${line}|${index}\n`,
      );
    });
  }, 90_000);

  it("takes a parameters file of 100,000 lines", async () => {
    const lines = Array.from({ length: 100_000 }, (_, i) => `case-${i}.dat --steps ${i % 97}`);
    writeFileSync(join(folder, "many.txt"), `${lines.join("\n")}\n`);
    writeFileSync(
      join(folder, "many.yaml"),
      "command: './sim ${param}'\ninputs: [many.txt]\nrequirements: 'host.name == \"nowhere\"'\narray: {paramsFile: many.txt}\n",
    );
    const started = Date.now();
    const submitted = await cli(server, ["submit", join(folder, "many.yaml")]);
    const seconds = (Date.now() - started) / 1000;
    expect(submitted.code, submitted.stderr).toBe(0);
    const id = submitted.stdout.trim();
    const summary = (await api(server, "GET", "/api/v1/jobs")) as { id: string; taskCount: number }[];
    expect(summary.find((job) => job.id === id)?.taskCount).toBe(100_000);
    expect(seconds).toBeLessThan(20);
    await api(server, "POST", `/api/v1/jobs/${id}/cancel`, {});
  }, 90_000);

  it("puts ${param} and ${param.KEY} into an argv command, and gives mappings STEWARD_PARAM_<KEY>", async () => {
    const id = await submit({
      command: [
        "sh",
        "-c",
        'echo "$0 $1 $STEWARD_PARAM_SEED $STEWARD_PARAM_IN_FILE $STEWARD_TASK_PARAM"',
        "${param.seed}",
        "$${param}",
      ],
      array: {
        params: [
          { seed: 11, "in-file": "a.dat" },
          { seed: 12, "in-file": "b.dat" },
        ],
      },
    });
    const job = await waitForJobEnd(server, id, 60_000);
    expect(job.state).toBe("succeeded");
    for (const [index, expected] of [
      '11 ${param} 11 a.dat {"seed":11,"in-file":"a.dat"}',
      '12 ${param} 12 b.dat {"seed":12,"in-file":"b.dat"}',
    ].entries()) {
      const logs = await cli(server, ["logs", id, "--task", String(index)]);
      expect(logs.stdout.trim()).toBe(expected);
    }
  }, 90_000);

  it("refuses a count that does not match the parameters, naming both, and creates nothing", async () => {
    writeFileSync(join(folder, "five.txt"), "1\n2\n3\n4\n5\n");
    writeFileSync(
      join(folder, "bad.yaml"),
      "command: 'true'\ninputs: [five.txt]\narray: {count: 4, paramsFile: five.txt}\n",
    );
    const before = ((await api(server, "GET", "/api/v1/jobs")) as unknown[]).length;
    const refused = await cli(server, ["submit", join(folder, "bad.yaml")]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(
      "array.count: count 4 does not match the 5 parameters of array.paramsFile five.txt",
    );
    const answer = await fetch(`${server.url}/api/v1/jobs`, {
      method: "POST",
      headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
      body: JSON.stringify({ command: "true", array: { count: 3, params: ["a", "b"] } }),
    });
    expect(answer.status).toBe(400);
    const { error } = (await answer.json()) as { error: { field: string; message: string } };
    expect(error.field).toBe("array.count");
    expect(error.message).toContain("count 3 does not match the 2 parameters of array.params");
    expect(((await api(server, "GET", "/api/v1/jobs")) as unknown[]).length).toBe(before);
  }, 60_000);
});

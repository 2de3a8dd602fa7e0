// A job file's (and a workflow file's) errors through the real CLI and server on loopback: the
// same message from `steward submit` (exit 2) and from the API's 400 (with the line and column as
// fields), naming the place of the field's key, `required` for a field left out, the known key an
// unknown one was meant to be; the file's text is sent as it is, so a job with inputs (multipart)
// points into it too. And `steward submit --dry-run` of a workflow file: every job checked and
// explained, nothing made.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ErrorAnswer } from "../../src/common/api/errors.ts";
import type { CheckedWorkflowFile } from "../../src/common/api/workflows.ts";
import { api, cleanup, cli, type StewardProcess, startUp, tempDir } from "../helpers/steward.ts";

let steward: StewardProcess;
let work: string;

beforeAll(async () => {
  steward = await startUp({ agents: 1, slots: 2 });
  work = tempDir("steward-jobfile-errors-");
  writeFileSync(join(work, "data.txt"), "data\n");
}, 60_000);

afterAll(async () => {
  await steward?.stop();
  cleanup(steward?.data, work);
});

async function jobCount(): Promise<number> {
  return ((await api(steward, "GET", "/api/v1/jobs?all=1")) as unknown[]).length;
}

/** `steward submit FILE ...` of `text` written to FILE in the work folder. */
async function submit(name: string, text: string, ...flags: string[]) {
  writeFileSync(join(work, name), text);
  return cli(steward, ["submit", name, ...flags], { cwd: work });
}

/** POST `text` with its content type; the 400's error object. */
async function refusal(path: string, text: string | FormData, type?: string): Promise<ErrorAnswer["error"]> {
  const response = await fetch(steward.url + path, {
    method: "POST",
    headers: { authorization: `Bearer ${steward.token}`, ...(type ? { "content-type": type } : {}) },
    body: text,
  });
  expect(response.status).toBe(400);
  return ((await response.json()) as ErrorAnswer).error;
}

describe("steward submit of a bad job file", () => {
  it.each<[string, string, string]>([
    [
      "a misspelt key",
      "name: x\ncomand: hostname\n",
      "line 2, column 1: comand: unknown key (did you mean command?)",
    ],
    [
      "a known alias, in a job with inputs (sent as multipart)",
      "command: cat data.txt\ninputs: [data.txt]\ntimeLimit: 60\n",
      "line 3, column 1: timeLimit: unknown key (did you mean timeLimitSeconds?)",
    ],
    ["a required key left out", "name: x\n", "line 1, column 1: command: required"],
    [
      "a YAML syntax error",
      "name: x\ncommand: [a,\nb: c\n",
      "line 3, column 1: not valid YAML or JSON: flow sequence in block collection must be sufficiently indented and end with a ]",
    ],
    [
      "a YAML syntax error in a job with inputs (read by the CLI)",
      "inputs: [data.txt]\ncommand: [a,\nb: c\n",
      "line 3, column 1: not valid YAML or JSON: flow sequence in block collection must be sufficiently indented and end with a ]",
    ],
    [
      "a missing input (found by the CLI)",
      "command: x\ninputs:\n  - data.txt\n  - absent.txt\n",
      `line 4, column 5: inputs[1]: absent.txt: no such file in ${"WORK"}`,
    ],
  ])("%s: one line on stderr, exit 2", async (_, text, message) => {
    const before = await jobCount();
    for (const flags of [[], ["--dry-run"]]) {
      const result = await submit("bad.yaml", text, ...flags);
      expect(result.code, result.stderr).toBe(2);
      expect(result.stderr).toBe(`steward: bad.yaml: ${message.replace("WORK", work)}\n`);
    }
    expect(await jobCount()).toBe(before);
  });

  it("a workflow file's errors point into it, also when its jobs have inputs (multipart)", async () => {
    const unknown = await submit(
      "flow.yaml",
      "jobs:\n  a:\n    command: 'true'\n  c:\n    command: 'true'\n    dependsOn: [a, x]\n",
    );
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe(
      "steward: flow.yaml: line 6, column 20: jobs.c.dependsOn[1]: no job named x in the workflow\n",
    );
    const misspelt = await submit(
      "flow.yaml",
      "jobs:\n  prep:\n    command: cat data.txt\n    inputs: [data.txt]\n  train:\n    comand: 'true'\n",
    );
    expect(misspelt.code).toBe(2);
    expect(misspelt.stderr).toBe(
      "steward: flow.yaml: line 6, column 5: jobs.train.comand: unknown key (did you mean command?)\n",
    );
  });
});

describe("the API's 400 for a bad job file", () => {
  const message = "line 2, column 1: comand: unknown key (did you mean command?)";

  it("sent as YAML: the same message, with the line and column", async () => {
    expect(await refusal("/api/v1/jobs", "name: x\ncomand: hostname\n", "application/yaml")).toEqual({
      code: "invalid",
      field: "comand",
      message,
      line: 2,
      column: 1,
    });
    expect(
      await refusal("/api/v1/jobs?dryRun=1", "name: x\ncomand: hostname\n", "application/yaml"),
    ).toMatchObject({ message, line: 2, column: 1 });
  });

  it("a refusal past the schema names the field's place; one of the request's own fields none", async () => {
    const dependency = await refusal(
      "/api/v1/jobs",
      "command: 'true'\ndependsOn: ['999999']\n",
      "application/yaml",
    );
    expect(dependency).toMatchObject({ field: "dependsOn[0]", line: 2, column: 13 });
    expect(dependency.message).toMatch(/^line 2, column 13: dependsOn\[0\]: no job 999999/);
    const response = await fetch(`${steward.url}/api/v1/jobs`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${steward.token}`,
        "content-type": "application/yaml",
        "idempotency-key": "not a key",
      },
      body: "command: 'true'\n",
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as ErrorAnswer).error).toEqual({
      code: "invalid",
      field: "Idempotency-Key",
      message: "Idempotency-Key: must be 1 to 128 letters, digits, - or _",
    });
  });

  it("sent as the multipart job field's text: the same", async () => {
    const form = new FormData();
    form.set("job", "name: x\ncomand: hostname\n");
    expect(await refusal("/api/v1/jobs", form)).toMatchObject({
      field: "comand",
      message,
      line: 2,
      column: 1,
    });
  });

  it("sent as JSON data: the field and the suggestion, no place", async () => {
    const error = await refusal(
      "/api/v1/jobs",
      JSON.stringify({ name: "x", comand: "hostname" }),
      "application/json",
    );
    expect(error).toEqual({
      code: "invalid",
      field: "comand",
      message: "comand: unknown key (did you mean command?)",
    });
  });

  it("a workflow file as YAML: the place in it", async () => {
    const error = await refusal(
      "/api/v1/workflows",
      "jobs:\n  a:\n    command: x\n    dependsOn: [b]\n",
      "application/yaml",
    );
    expect(error).toEqual({
      code: "invalid",
      field: "jobs.a.dependsOn[0]",
      message: "line 4, column 17: jobs.a.dependsOn[0]: no job named b in the workflow",
      line: 4,
      column: 17,
    });
  });
});

describe("steward submit --dry-run of a workflow file", () => {
  const workflow =
    "name: pipeline\njobs:\n  train:\n    command: 'true'\n    array: 3\n    dependsOn: [prep]\n" +
    "  prep:\n    command: cat data.txt\n    inputs: [data.txt]\n" +
    "  report:\n    command: 'true'\n    requirements: host.memFreeMb > 1e12\n" +
    "    dependsOn: [{job: train, when: ended}]\n";

  it("checks every job and prints each one's dry run, making nothing (exit 0)", async () => {
    const before = await jobCount();
    const result = await submit("flow.yaml", workflow, "--dry-run");
    expect(result.code, result.stderr).toBe(0);
    expect(result.stdout).toContain("flow.yaml is a valid workflow (3 jobs); nothing was made\n");
    // In the order a submit makes them, each with explain's hosts and clauses.
    const prep = result.stdout.indexOf("job prep (1 task): submitted now, it would be pending\n");
    const train = result.stdout.indexOf("job train (3 tasks): waits for prep; then it would be pending\n");
    const report = result.stdout.indexOf(
      "job report (1 task): waits for train to end; then it would be pending\n",
    );
    expect(prep).toBeGreaterThan(0);
    expect(train).toBeGreaterThan(prep);
    expect(report).toBeGreaterThan(train);
    expect(result.stdout).toMatch(/\n +0 +host\.memFreeMb > 1e12\n/);
    expect(result.stdout.slice(report)).toContain("no host matches it now");
    expect(result.stdout.slice(prep, train)).toMatch(/1 host matches the requirements/);
    expect(await jobCount()).toBe(before);
    const json = await submit("flow.yaml", workflow, "--dry-run", "--json");
    expect(json.code, json.stderr).toBe(0);
    const answer = JSON.parse(json.stdout) as CheckedWorkflowFile;
    expect(answer.name).toBe("pipeline");
    expect(answer.jobs.map((job) => job.name)).toEqual(["prep", "train", "report"]);
    expect(answer.jobs[2].dependsOn).toEqual([{ name: "train", when: "ended", sameTasks: false }]);
    expect(answer.jobs[1].explanation?.summary.matching).toBe(1);
    expect(await jobCount()).toBe(before);
  });

  it("refuses a cycle or an unknown dependency as a submit does (exit 2)", async () => {
    const cycle = await submit(
      "flow.yaml",
      "jobs:\n  a: {command: 'true', dependsOn: [b]}\n  b: {command: 'true', dependsOn: [a]}\n",
      "--dry-run",
    );
    expect(cycle.code).toBe(2);
    expect(cycle.stderr).toBe(
      "steward: flow.yaml: line 2, column 36: jobs.a.dependsOn[0]: cycle: a -> b -> a\n",
    );
    const unknown = await submit("flow.yaml", "jobs:\n  a: {command: 'true', dependsOn: [x]}\n", "--dry-run");
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain("jobs.a.dependsOn[0]: no job named x in the workflow");
  });

  it("the API's dry run answers the jobs checked, and takes no multipart", async () => {
    const before = await jobCount();
    const response = await fetch(`${steward.url}/api/v1/workflows?dryRun=1`, {
      method: "POST",
      headers: { authorization: `Bearer ${steward.token}`, "content-type": "application/yaml" },
      body: "jobs:\n  a: {command: 'true'}\n  b: {command: 'true', dependsOn: [a], retry: {maxAttempts: 2}}\n",
    });
    expect(response.status).toBe(200);
    const answer = (await response.json()) as CheckedWorkflowFile;
    expect(answer.jobs.map((job) => [job.name, job.spec.retry.maxAttempts, job.explanation])).toEqual([
      ["a", 1, undefined],
      ["b", 2, undefined],
    ]);
    const form = new FormData();
    form.set("workflow", "jobs:\n  a: {command: 'true'}\n");
    expect(await refusal("/api/v1/workflows?dryRun=1", form)).toMatchObject({ field: "dryRun" });
    expect(await jobCount()).toBe(before);
  });
});

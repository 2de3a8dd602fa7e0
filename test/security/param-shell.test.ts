// biome-ignore-all lint/suspicious/noTemplateCurlyInString: `${param}` is the job file's placeholder, written as users write it
// `${param:q}` puts an array task's parameter into a string command as one shell-quoted word: the
// shell reads back exactly the text, and nothing in it runs (`x$(cmd)`, `"; cmd; "`, backquotes,
// quotes of either kind). A plain `${param}` goes in before the shell parses the command, so it is
// the form for a list command only (docs/job-environment.md). Real shells, then a real server and
// agent running an array whose parameters are hostile.

import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { substituteParam } from "../../src/common/model/array-params.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  cli,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

let server: StewardProcess & { joinToken: string };
let agent: AgentProcess;
let marks: string;

/** Parameters that would run `touch MARKS/N` if the shell took them as code. */
function hostile(): string[] {
  return [
    `x$(touch ${marks}/1)`,
    `"; touch ${marks}/2; "`,
    `'; touch ${marks}/3; '`,
    `\`touch ${marks}/4\``,
    `a b  c; touch ${marks}/5 && echo $HOME`,
    "it's a \\ backslash and a ' quote",
    `two\nlines $(touch ${marks}/6)`,
    "",
  ];
}

beforeAll(async () => {
  marks = mkdtempSync(join(tmpdir(), "steward-param-marks-"));
  server = await startServerProcess();
  agent = await startAgentProcess({
    name: "p1",
    slots: 4,
    servers: [server.url],
    joinToken: server.joinToken,
  });
  await waitFor("agent attached", async () => {
    const hosts = (await api(server, "GET", "/api/v1/hosts")) as { name: string; connected: boolean }[];
    return hosts.some((host) => host.name === "p1" && host.connected);
  });
}, 60_000);

afterAll(async () => {
  await agent?.stop();
  await server?.stop();
  cleanup(server?.data ?? "", agent?.work ?? "", marks ?? "");
});

describe("${param:q} is one shell word, whatever the parameter holds", () => {
  it.each(["/bin/sh", "bash"])("%s reads back exactly the text and runs none of it", (shell) => {
    for (const param of hostile()) {
      const command = substituteParam("printf '%s|' ${param:q} ${param.k:q}", { k: param });
      const quotedWhole = substituteParam("printf '%s' ${param:q}", param);
      expect(execFileSync(shell, ["-c", quotedWhole], { encoding: "utf8" })).toBe(param);
      expect(execFileSync(shell, ["-c", command], { encoding: "utf8" })).toBe(
        `${JSON.stringify({ k: param })}|${param}|`,
      );
    }
    expect(readdirSync(marks)).toEqual([]);
  });

  it("an array's tasks get their hostile parameters as data through a string command", async () => {
    const params = hostile().filter((param) => param !== "");
    const { id } = (await api(server, "POST", "/api/v1/jobs", {
      command: `printf '%s\\n' \${param:q} "$STEWARD_TASK_PARAM"`,
      array: { params },
    })) as { id: string };
    const job = await waitForJobEnd(server, id, 60_000);
    expect(job.state).toBe("succeeded");
    for (const [index, param] of params.entries()) {
      const logs = await cli(server, ["logs", id, "--task", String(index)]);
      expect(logs.stdout).toBe(`${param}\n${param}\n`);
    }
    expect(readdirSync(marks)).toEqual([]);
  }, 90_000);

  it("refuses a modifier other than :q at submit, naming the field", async () => {
    const refused = await api(server, "POST", "/api/v1/jobs", {
      command: "echo ${param:x}",
      array: { params: ["a"] },
    }).catch((error: { status: number; message: string }) => error);
    expect(refused).toMatchObject({ status: 400 });
    expect((refused as Error).message).toContain(
      "command: ${param:x}: no modifier :x (${param:q} is the parameter as one shell word)",
    );
  });
});

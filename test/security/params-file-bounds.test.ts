// An array's parameters file is read by the broker as it comes, with bounds: a file larger than
// 64 MiB, or of more than 1,000,000 lines (the most tasks an array may have), is refused at submit
// (400, naming the bound), for a job and for a workflow's job, and nothing is made. The broker
// does not hold the file: its memory after a refused 70 MB file is printed (RSS of the server).

import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, cleanup, cli, type StewardProcess, startServerProcess, tempDir } from "../helpers/steward.ts";

let server: StewardProcess;
let folder: string;

beforeAll(async () => {
  server = await startServerProcess();
  folder = tempDir("steward-params-bounds-");
});

afterAll(async () => {
  await server?.stop();
  cleanup(server?.data ?? "", folder);
});

async function jobCount(): Promise<number> {
  return ((await api(server, "GET", "/api/v1/jobs?all=1")) as unknown[]).length;
}

function rssMiB(pid: number): number {
  const line = readFileSync(`/proc/${pid}/status`, "utf8")
    .split("\n")
    .find((entry) => entry.startsWith("VmRSS:"));
  return Math.round(Number(line?.split(/\s+/)[1] ?? 0) / 1024);
}

describe("a parameters file is read with bounds", () => {
  it("refuses a file of 1,000,001 lines, naming the line limit, for a job and a workflow's job", async () => {
    writeFileSync(join(folder, "many.txt"), "1\n".repeat(1_000_001));
    writeFileSync(
      join(folder, "many.yaml"),
      "command: 'true'\ninputs: [many.txt]\narray: {paramsFile: many.txt}\n",
    );
    writeFileSync(
      join(folder, "flow.yaml"),
      "jobs:\n  sweep: {command: 'true', inputs: [many.txt], array: {paramsFile: many.txt}}\n",
    );
    const before = await jobCount();
    const refused = await cli(server, ["submit", join(folder, "many.yaml")]);
    expect(refused.code, refused.stdout).toBe(2);
    expect(refused.stderr).toContain(
      "array.paramsFile: many.txt has more than 1,000,000 lines, the most tasks an array may have (one task per line)",
    );
    const flow = await cli(server, ["submit", join(folder, "flow.yaml")]);
    expect(flow.code, flow.stdout).toBe(2);
    expect(flow.stderr).toContain("jobs.sweep.array.paramsFile: many.txt has more than 1,000,000 lines");
    expect(await jobCount()).toBe(before);
  }, 120_000);

  it("refuses a file larger than 64 MiB, naming the size limit, without holding it", async () => {
    // 700,000 lines of 100 bytes: under the line limit, over the size limit.
    const line = `${"p".repeat(99)}\n`;
    writeFileSync(join(folder, "big.txt"), line.repeat(700_000));
    writeFileSync(
      join(folder, "big.yaml"),
      "command: 'true'\ninputs: [big.txt]\narray: {paramsFile: big.txt}\n",
    );
    const pid = server.child.pid ?? 0;
    const rssBefore = rssMiB(pid);
    const before = await jobCount();
    const refused = await cli(server, ["submit", join(folder, "big.yaml")]);
    expect(refused.code, refused.stdout).toBe(2);
    expect(refused.stderr).toContain(
      "array.paramsFile: big.txt is larger than 64 MiB, the largest parameters file: split the array into several jobs",
    );
    expect(await jobCount()).toBe(before);
    const rssAfter = rssMiB(pid);
    console.log(`a refused 70 MB parameters file: broker RSS ${rssBefore} MiB before, ${rssAfter} MiB after`);
  }, 120_000);
});

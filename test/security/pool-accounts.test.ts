// A pool whose pilots would run as the broker's own account is refused at start (issue 22, item 3):
// every job on such a pilot could read the broker's data folder (admin token, database, files).
// `allowBrokerAccount: true` accepts the risk, and the broker says so in its log, naming the pool.
// Needs no Slurm: the refusal comes before any pilot.

import { writeFileSync } from "node:fs";
import { userInfo } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { cleanup, startServerProcess, tempDir } from "../helpers/steward.ts";

const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) cleanup(dir);
});

function poolsFile(lines: string[]): { data: string; file: string } {
  const data = tempDir("steward-pool-accounts-");
  dirs.push(data);
  const file = join(data, "pools.yaml");
  writeFileSync(file, ["pools:", "  - name: hpc", "    driver: slurm", ...lines].join("\n"));
  return { data, file };
}

describe("pools whose pilots would run as the broker's account", () => {
  it.each([
    ["no account", []],
    ["the broker's own account named", [`    account: ${userInfo().username}`]],
  ])("%s: the server does not start", async (_, lines) => {
    const { data, file } = poolsFile(lines);
    const started = startServerProcess({ data, args: ["--pools", file] });
    const refused = await started.then(
      async (server) => {
        await server.stop();
        return null;
      },
      (error: Error) => error.message,
    );
    expect(refused, "the server started").not.toBeNull();
    expect(refused).toMatch(/pool hpc: its pilots would run as the broker's own account/);
    expect(refused).toMatch(/allowBrokerAccount: true/);
  });

  it("allowBrokerAccount: true starts, with a warning naming the pool and the risk", async () => {
    const { data, file } = poolsFile(["    allowBrokerAccount: true"]);
    const server = await startServerProcess({ data, args: ["--pools", file] });
    try {
      expect(server.output()).toMatch(
        /pool hpc: pilots run as the broker's own account .*read the broker's data folder/,
      );
    } finally {
      await server.stop();
    }
  });
});

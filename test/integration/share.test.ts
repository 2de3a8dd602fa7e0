// `steward share` against a real server started with --shares and --fair-share-half-life, with
// usage from real short jobs: the tree with each line's shares, usage and factor; a user sees
// their own line and the accounts above it; the usage comes back after a restart (rebuilt from
// the attempts); a bad shares file or half-life stops the server naming what is wrong; the
// settings come from the config file and STEWARD_* variables too.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { z } from "zod";
import type { sharesSchema } from "../../src/common/api/shares.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  cli,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

type Shares = z.infer<typeof sharesSchema>;

const dir = tempDir("steward-share-");
const sharesFile = join(dir, "shares.yaml");
writeFileSync(
  sharesFile,
  `accounts:
  physics:
    shares: 3
    users: {alice: 1, bob: 1}
  biology:
    shares: 1
    users: {carol: 1}
`,
);
const SERVER_ARGS = ["--shares", sharesFile, "--fair-share-half-life", "36h"];
/** A little CPU: the shell counts to 300,000. */
const BURN = "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done";

let server: StewardProcess & { joinToken: string };
let agent: AgentProcess;
const tokens: Record<string, string> = {};
const as = (user: string) => ({ url: server.url, token: tokens[user] });

async function makeToken(user: string, role: string): Promise<string> {
  const result = await cli(server, ["token", "create", "--user", user, "--role", role]);
  expect(result.code, result.stderr).toBe(0);
  return result.stdout.trim();
}

async function share(user: string | null): Promise<Shares> {
  const result = await cli(user === null ? server : as(user), ["share", "--json"]);
  expect(result.code, result.stderr).toBe(0);
  return JSON.parse(result.stdout) as Shares;
}

function line(shares: Shares, name: string) {
  const found = shares.lines.find((each) => each.name === name);
  if (!found) throw new Error(`no line ${name} in ${JSON.stringify(shares.lines)}`);
  return found;
}

beforeAll(async () => {
  server = await startServerProcess({ data: join(dir, "data"), args: SERVER_ARGS });
  agent = await startAgentProcess({
    name: "s1",
    slots: 2,
    servers: [server.url],
    joinToken: server.joinToken,
  });
  await waitFor("the agent to join", async () =>
    ((await api(server, "GET", "/api/v1/hosts")) as { connected: boolean }[]).some((h) => h.connected),
  );
  for (const user of ["alice", "carol", "dave"]) tokens[user] = await makeToken(user, "user");
  tokens.rita = await makeToken("rita", "reader");
  const jobs: string[] = [];
  for (const user of ["alice", "carol"])
    jobs.push(
      ((await api(as(user), "POST", "/api/v1/jobs", { name: "burn", command: BURN })) as { id: string }).id,
    );
  for (const id of jobs) await waitForJobEnd(server, id, 60_000);
}, 120_000);

afterAll(async () => {
  await agent?.crash();
  await server?.stop();
  cleanup(dir, agent?.work ?? "");
});

describe("steward share", () => {
  it("an admin sees the whole tree: shares, decayed usage of real jobs, and factors", async () => {
    const shares = await share(null);
    expect(shares.halfLifeSeconds).toBe(36 * 3600);
    expect(shares.lines[0]).toMatchObject({ kind: "account", name: "root", parent: null, depth: 0 });
    expect(shares.lines.map((each) => each.name).sort()).toStrictEqual(
      ["root", "physics", "alice", "bob", "biology", "carol"].sort(),
    );
    const alice = line(shares, "alice");
    const carol = line(shares, "carol");
    expect(alice).toMatchObject({ kind: "user", parent: "physics", depth: 2, rawShares: 1 });
    expect(alice.normShares).toBeCloseTo(0.375, 9);
    expect(line(shares, "physics")).toMatchObject({ rawShares: 3, normShares: 0.75, factor: null });
    expect(alice.usage).toBeGreaterThan(0);
    expect(carol.usage).toBeGreaterThan(0);
    expect(line(shares, "root").usage).toBeCloseTo(alice.usage + carol.usage, 3);
    // bob used nothing: a newcomer, first; alice and carol each used about as much, and physics
    // has three times biology's shares: alice's account is the under-served one.
    expect(line(shares, "bob").factor).toBe(1);
    expect(line(shares, "bob").usage).toBe(0);
    expect(alice.factor).toBeGreaterThan(carol.factor ?? 1);

    const table = await cli(server, ["share"]);
    expect(table.code, table.stderr).toBe(0);
    const rows = table.stdout.trimEnd().split("\n");
    expect(rows[0]).toMatch(
      /^ACCOUNT\s+USER\s+RAW SHARES\s+NORM SHARES\s+USAGE\s+NORM USAGE\s+LEVEL FS\s+FACTOR$/,
    );
    expect(rows[1]).toMatch(/^root\s/);
    expect(rows.some((row) => /^ physics\s+alice\s+1\s+0\.375000\s+\d+\.\d\d\s/.test(row))).toBe(true);
  });

  it("a reader sees every line; a user sees their own line and the accounts above it", async () => {
    expect((await share("rita")).lines.length).toBe(6);
    expect((await share("alice")).lines.map((each) => each.name)).toStrictEqual(["root", "physics", "alice"]);
    expect((await share("carol")).lines.map((each) => each.name)).toStrictEqual(["root", "biology", "carol"]);
    // dave is named nowhere: a leaf of one share under the root, a newcomer.
    const dave = (await share("dave")).lines;
    expect(dave.map((each) => [each.name, each.depth])).toStrictEqual([
      ["root", 0],
      ["dave", 1],
    ]);
    expect(dave[1]).toMatchObject({ rawShares: 1, factor: 1, usage: 0 });
  });

  it("keeps the usage across a restart: rebuilt from the attempts", async () => {
    const before = await share(null);
    await server.stop();
    server = await startServerProcess({ data: server.data, args: SERVER_ARGS });
    const after = await share(null);
    for (const name of ["alice", "carol"]) {
      expect(line(after, name).usage).toBeGreaterThan(0);
      // Decayed a little more in the seconds between (36 h half-life): the same to 0.05 cpu-seconds.
      expect(line(after, name).usage).toBeCloseTo(line(before, name).usage, 1);
    }
  });
});

describe("the fair-share settings", () => {
  it.each([
    [
      "a share of 0",
      "accounts: {physics: {shares: 0}}",
      "accounts.physics.shares: must be a positive number",
    ],
    [
      "a user in two accounts",
      "accounts: {a: {shares: 1, users: {alice: 1}}, b: {shares: 1, users: {alice: 1}}}",
      "accounts.b.users.alice: user alice is in two accounts",
    ],
  ])("a shares file with %s stops the server, naming the field", async (_, text, message) => {
    const file = join(dir, "bad-shares.yaml");
    writeFileSync(file, text);
    const result = await cli(null, [
      "server",
      "--data",
      join(dir, "refused"),
      "--port",
      "0",
      "--shares",
      file,
    ]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(`--shares ${file}: ${message}`);
  });

  it("a half-life that is no duration is refused", async () => {
    const result = await cli(null, [
      "server",
      "--data",
      join(dir, "refused"),
      "--fair-share-half-life",
      "7x",
    ]);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain(
      "--fair-share-half-life needs a duration such as 7d, 36h, 90m or 3600s, not 7x",
    );
  });

  it("comes from the config file and STEWARD_* variables as the other settings do", async () => {
    const config = join(dir, "server.yaml");
    writeFileSync(config, `shares: ${sharesFile}\nfair-share-half-life: 2d\n`);
    const fromFile = await cli(null, ["config", "--server", "--config", config]);
    expect(fromFile.code, fromFile.stderr).toBe(0);
    expect(fromFile.stdout).toContain(`shares: ${sharesFile}`);
    expect(fromFile.stdout).toContain("fair-share-half-life: 172800");
    const fromEnv = await cli(null, ["config", "--server"], {
      env: { STEWARD_FAIR_SHARE_HALF_LIFE: "3600s" },
    });
    expect(fromEnv.code, fromEnv.stderr).toBe(0);
    expect(fromEnv.stdout).toContain("fair-share-half-life: 3600");
    const byDefault = await cli(null, ["config", "--server"]);
    expect(byDefault.stdout).toContain("fair-share-half-life: 604800");
  });
});

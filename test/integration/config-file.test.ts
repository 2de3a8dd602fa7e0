// Config files and STEWARD_* variables on real processes: `steward config` shows what a daemon
// would run with; a server and an agent started from files alone run with those settings, the
// variables and the flags overriding them.

import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import type { Host } from "../../src/common/api/hosts.ts";
import { cleanup, cli, freePort, STEWARD, tempDir, waitFor } from "../helpers/steward.ts";

let children: ChildProcess[] = [];
let dirs: string[] = [];

afterEach(async () => {
  for (const child of children)
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise((done) => child.once("exit", done));
      child.kill("SIGTERM");
      await exited;
    }
  cleanup(...dirs);
  children = [];
  dirs = [];
});

function daemon(
  args: string[],
  env: Record<string, string> = {},
): { child: ChildProcess; output: () => string } {
  const child = spawn(STEWARD, args, { stdio: ["ignore", "pipe", "pipe"], env: { ...process.env, ...env } });
  children.push(child);
  let text = "";
  child.stdout?.on("data", (chunk) => (text += chunk));
  child.stderr?.on("data", (chunk) => (text += chunk));
  return { child, output: () => text };
}

it("steward config prints the file's settings, the variables over them, secrets redacted", async () => {
  const dir = tempDir();
  dirs.push(dir);
  const config = join(dir, "server.yaml");
  writeFileSync(
    config,
    "port: 4999\nheartbeat-seconds: 3\njoin-token: join-secret\nstore: postgres://steward:pw@db/grid\n",
    // It holds secrets: a file others may read would be refused.
    { mode: 0o600 },
  );
  const result = await cli(null, ["config", "--server", "--config", config], {
    env: { STEWARD_HEARTBEAT_SECONDS: "5" },
  });
  expect(result.stderr).toBe("");
  expect(result.code).toBe(0);
  expect(result.stdout).toContain(`port: 4999 # from ${config}\n`);
  expect(result.stdout).toContain("heartbeat-seconds: 5 # from STEWARD_HEARTBEAT_SECONDS\n");
  expect(result.stdout).toContain(`join-token: <redacted> # from ${config}\n`);
  expect(result.stdout).toContain(`store: postgres://steward:<redacted>@db/grid # from ${config}\n`);
  expect(result.stdout).not.toContain("secret");
  expect(result.stdout).not.toContain(":pw@");
});

it("an unknown key stops the daemon and steward config, naming the key and its line (exit 2)", async () => {
  const dir = tempDir();
  dirs.push(dir);
  const config = join(dir, "server.yaml");
  writeFileSync(config, `data: ${dir}\nport: 4999\nheartbeat: 2\n`);
  const message = `steward: ${config}:3: unknown key heartbeat (the keys are the flags of steward server without the dashes)\n`;
  const shown = await cli(null, ["config", "--server", "--config", config]);
  expect(shown.code).toBe(2);
  expect(shown.stderr).toBe(message);
  const started = await cli(null, ["server", "--config", config]);
  expect(started.code).toBe(2);
  expect(started.stderr).toBe(message);
});

it("a server and an agent run from config files; variables override the file, flags override both", async () => {
  const dir = tempDir();
  dirs.push(dir);
  const [filePort, flagPort] = [await freePort(), await freePort()];
  const serverConfig = join(dir, "server.yaml");
  writeFileSync(
    serverConfig,
    [
      `data: ${join(dir, "data")}`,
      `port: ${filePort}`,
      `advertise-url: http://from-file.invalid:${flagPort}`,
      "host-timeout-seconds: 30",
    ].join("\n"),
  );
  const advertised = `http://from-env.invalid:${flagPort}`;
  const server = daemon(["server", "--config", serverConfig, "--port", String(flagPort)], {
    STEWARD_ADVERTISE_URL: advertised,
  });
  const url = `http://127.0.0.1:${flagPort}`;
  const health = await waitFor(
    "the server on the flag's port",
    async () => {
      if (server.child.exitCode !== null) throw new Error(server.output());
      return (await (await fetch(`${url}/healthz`)).json()) as { leader: string };
    },
    30_000,
  );
  expect(health.leader).toBe(advertised);
  const token = readFileSync(join(dir, "data", "admin-token"), "utf8").trim();

  const tokenFile = join(dir, "data", "join-token");
  const agentConfig = join(dir, "agent.yaml");
  writeFileSync(
    agentConfig,
    [
      `server: ${url}`,
      `token-file: ${tokenFile}`,
      "name: from-file",
      `work: ${join(dir, "work")}`,
      "slots: 3",
      "label: [zone=eu, disk=ssd]",
      "speed: 1",
    ].join("\n"),
  );
  daemon(["agent", "--config", agentConfig, "--slots", "2"], { STEWARD_LABEL: "zone=us" });
  const host = await waitFor("the agent's host", async () => {
    const response = await fetch(`${url}/api/v1/hosts`, { headers: { authorization: `Bearer ${token}` } });
    const hosts = (await response.json()) as Host[];
    return hosts.find((each) => each.name === "from-file");
  });
  expect(host.slots).toBe(2);
  expect(host.labels).toEqual({ zone: "us" });

  // A --token-file flag wins over STEWARD_JOIN_TOKEN too.
  daemon(
    ["agent", "--server", url, "--token-file", tokenFile, "--name", "flag-file", "--work", join(dir, "w2")],
    { STEWARD_JOIN_TOKEN: "not-the-join-token" },
  );
  await waitFor("the agent with --token-file", async () => {
    const response = await fetch(`${url}/api/v1/hosts`, { headers: { authorization: `Bearer ${token}` } });
    return ((await response.json()) as Host[]).find((each) => each.name === "flag-file");
  });
});

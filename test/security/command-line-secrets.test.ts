// Secrets on a command line show in /proc/PID/cmdline, where any local account reads them. The
// units and their README give the store's password and the tokens as variables (the environment
// file), never in STEWARD_SERVER_FLAGS; the server's help shows the URL without a password; the
// server warns at its start for a password or token on its command line; and a --config file
// that holds a secret and that other accounts may read is refused.

import { spawn } from "node:child_process";
import { chmodSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { dropSchema, freshSchema, postgresUnreachable, urlWithSchema } from "../helpers/postgres.ts";
import { cleanup, cli, freePort, ROOT, STEWARD, tempDir, waitFor } from "../helpers/steward.ts";

const dir = tempDir("steward-cmdline-secrets-");
const unreachable = await postgresUnreachable();
afterAll(() => cleanup(dir));

describe("the deployment files", () => {
  const files = [
    join(ROOT, "deploy", "README.md"),
    ...readdirSync(join(ROOT, "deploy", "systemd")).map((name) => join(ROOT, "deploy", "systemd", name)),
  ];
  it.each(files)("%s puts no secret in a *_FLAGS variable (the command line)", (file) => {
    const flagLines = readFileSync(file, "utf8")
      .split("\n")
      .filter((line) => /STEWARD_(SERVER|AGENT)_FLAGS=/.test(line));
    for (const line of flagLines) {
      expect(line).not.toMatch(/--store\b/);
      expect(line).not.toMatch(/--(join-)?token\b(?!-file)/);
      expect(line).not.toMatch(/:\/\/[^/@\s]*:[^@\s]*@|password=/i);
    }
  });

  it("the README gives the store's URL as STEWARD_STORE", () => {
    expect(readFileSync(join(ROOT, "deploy", "README.md"), "utf8")).toMatch(/^STEWARD_STORE=postgres:\/\//m);
  });
});

it("steward server --help shows the store's URL without a password, and where the password goes", async () => {
  const help = await cli(null, ["server", "--help"]);
  expect(help.stdout).not.toContain("USER:PASSWORD@");
  expect(help.stdout).toContain("STEWARD_STORE");
  expect(help.stdout).toContain("STEWARD_ADMIN_TOKEN");
});

/** Starts `steward server` with these arguments and variables; its output once it listens, then stops it. */
async function startOutput(args: string[], env: Record<string, string> = {}): Promise<string> {
  const port = await freePort();
  const data = tempDir("steward-cmdline-data-");
  const child = spawn(STEWARD, ["server", "--data", data, "--port", String(port), ...args], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, ...env },
  });
  let output = "";
  child.stdout.on("data", (chunk) => (output += chunk));
  child.stderr.on("data", (chunk) => (output += chunk));
  try {
    await waitFor("the server's start", () => output.includes("  blobs:"), 30_000);
    return output;
  } finally {
    child.kill("SIGTERM");
    await new Promise((done) => child.once("exit", done));
    cleanup(data);
  }
}

describe("steward server's start", () => {
  it("warns for --token and --join-token on its command line, naming the variables", async () => {
    const output = await startOutput(["--token", "admin-on-argv", "--join-token", "join-on-argv"]);
    expect(output).toContain("--token holds its value, which shows in the process list");
    expect(output).toContain("give it as STEWARD_ADMIN_TOKEN");
    expect(output).toContain("--join-token holds its value, which shows in the process list");
    expect(output).toContain("give it as STEWARD_JOIN_TOKEN");
  });

  it("takes the tokens from STEWARD_ADMIN_TOKEN and STEWARD_JOIN_TOKEN without a warning", async () => {
    const data = tempDir("steward-cmdline-env-");
    const port = await freePort();
    const child = spawn(STEWARD, ["server", "--data", data, "--port", String(port)], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, STEWARD_ADMIN_TOKEN: "admin-from-env", STEWARD_JOIN_TOKEN: "join-from-env" },
    });
    let output = "";
    child.stderr.on("data", (chunk) => (output += chunk));
    child.stdout.on("data", (chunk) => (output += chunk));
    try {
      await waitFor("the server's start", () => output.includes("  blobs:"), 30_000);
      const hosts = await fetch(`http://127.0.0.1:${port}/api/v1/hosts`, {
        headers: { authorization: "Bearer admin-from-env" },
      });
      expect(hosts.status).toBe(200);
      expect(readFileSync(join(data, "join-token"), "utf8").trim()).toBe("join-from-env");
      expect(output).not.toContain("process list");
    } finally {
      child.kill("SIGTERM");
      await new Promise((done) => child.once("exit", done));
      cleanup(data);
    }
  });

  it.skipIf(unreachable !== null && process.env.CI !== "true")(
    "warns for a store URL with a password on its command line, and not for one in STEWARD_STORE",
    async () => {
      const schema = freshSchema("steward_cmdline");
      const store = `${urlWithSchema(schema)}&password=on-argv`;
      try {
        const onArgv = await startOutput(["--store", store]);
        expect(onArgv).toContain("--store holds a password, which shows in the process list");
        expect(onArgv).toContain("give it as STEWARD_STORE");
        expect(onArgv).not.toContain("on-argv");
        const inEnv = await startOutput([], { STEWARD_STORE: store });
        expect(inEnv).toContain("password=<redacted>");
        expect(inEnv).not.toContain("process list");
      } finally {
        await dropSchema(schema);
      }
    },
    60_000,
  );
});

describe("a --config file holding a secret", () => {
  it.each([
    ["join-token: j-secret\n", "join-token"],
    ["token: a-secret\n", "token"],
    ["store: postgres://steward:pw@db/grid\n", "store"],
    ["store: postgres://steward@db/grid?password=pw\n", "store"],
  ])("%j that others may read is refused (exit 2), and taken at 0600", async (text, key) => {
    const file = join(dir, `${key}-${text.length}.yaml`);
    writeFileSync(file, text);
    chmodSync(file, 0o644);
    const refused = await cli(null, ["config", "--server", "--config", file]);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain(`--config ${file} holds secrets (${key}) and has mode 0644`);
    expect(refused.stderr).toContain(`chmod 600 ${file}`);
    const daemon = await cli(null, ["server", "--config", file, "--port", "1"]);
    expect(daemon.code).toBe(2);
    expect(daemon.stderr).toContain("holds secrets");
    chmodSync(file, 0o600);
    const taken = await cli(null, ["config", "--server", "--config", file]);
    expect(taken.code, taken.stderr).toBe(0);
  });

  it("a file without a secret may be read by others", async () => {
    const file = join(dir, "plain.yaml");
    writeFileSync(file, "port: 4999\nstore: postgres://steward@db/grid?schema=s\n");
    chmodSync(file, 0o644);
    const result = await cli(null, ["config", "--server", "--config", file]);
    expect(result.code, result.stderr).toBe(0);
  });
});

// Real Steward processes for integration and fault tests: free ports, temp folders, clean-up.

import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";

export const ROOT = resolve(import.meta.dirname, "../..");
export const STEWARD = join(ROOT, "bin/steward");

export function freePort(): Promise<number> {
  return new Promise((done, fail) => {
    const server = createServer();
    server.once("error", fail);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => done(port));
    });
  });
}

export function tempDir(prefix = "steward-test-"): string {
  return mkdtempSync(join(tmpdir(), prefix));
}

export async function waitFor<T>(
  what: string,
  check: () => Promise<T | null | undefined | false> | T | null | undefined | false,
  timeoutMs = 20_000,
  everyMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown = null;
  while (Date.now() < deadline) {
    try {
      const value = await check();
      if (value) return value;
    } catch (error) {
      last = error;
    }
    await sleep(everyMs);
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${last}` : ""}`);
}

export interface StewardProcess {
  url: string;
  port: number;
  data: string;
  token: string;
  child: ChildProcess;
  output: () => string;
  /** SIGTERM and wait for the exit. */
  stop(): Promise<void>;
  /** kill -9 of the Steward process alone (its attempts' process groups survive, as after a crash). */
  kill9(): Promise<void>;
}

export interface UpOptions {
  data?: string;
  port?: number;
  agents?: number;
  slots?: number;
  args?: string[];
}

/** `steward up` as a real process; resolves once /healthz answers and the agents are attached. */
export async function startUp(options: UpOptions = {}): Promise<StewardProcess> {
  const data = options.data ?? tempDir();
  const port = options.port ?? (await freePort());
  const agents = options.agents ?? 1;
  const args = [
    "up",
    "--data",
    data,
    "--port",
    String(port),
    "--agents",
    String(agents),
    "--slots",
    String(options.slots ?? 2),
    ...(options.args ?? []),
  ];
  return startProcess(args, { data, port, agents });
}

async function startProcess(
  args: string[],
  at: { data: string; port: number; agents: number },
): Promise<StewardProcess> {
  const child = spawn(STEWARD, args, {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, STEWARD_LOG_LEVEL: "warn" },
  });
  let output = "";
  child.stdout?.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    output += chunk;
  });
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  const url = `http://127.0.0.1:${at.port}`;
  await waitFor(
    `steward at ${url}`,
    async () => {
      if (child.exitCode !== null) throw new Error(`steward exited ${child.exitCode}: ${output}`);
      const response = await fetch(`${url}/healthz`);
      return response.ok;
    },
    30_000,
  );
  const token = readFileSync(join(at.data, "admin-token"), "utf8").trim();
  const processHandle: StewardProcess = {
    url,
    port: at.port,
    data: at.data,
    token,
    child,
    output: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      await Promise.race([exited, sleep(10_000)]);
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
    async kill9() {
      child.kill("SIGKILL");
      await exited;
    },
  };
  if (at.agents > 0) {
    await waitFor("agents attached", async () => {
      const hosts = (await api(processHandle, "GET", "/api/v1/hosts")) as { connected: boolean }[];
      return hosts.filter((host) => host.connected).length >= at.agents;
    });
  }
  return processHandle;
}

export async function api(
  server: { url: string; token: string },
  method: string,
  path: string,
  body?: unknown,
) {
  const response = await fetch(server.url + path, {
    method,
    headers: {
      authorization: `Bearer ${server.token}`,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await response.text();
  const parsed = text ? JSON.parse(text) : null;
  if (!response.ok)
    throw Object.assign(new Error(`${method} ${path}: ${response.status} ${text}`), {
      status: response.status,
      body: parsed,
    });
  return parsed;
}

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs `bin/steward ARGS` against a server. */
export function cli(
  server: { url: string; token: string } | null,
  args: string[],
  options: { cwd?: string; env?: Record<string, string> } = {},
): Promise<CliResult> {
  return new Promise((done) => {
    const env: Record<string, string | undefined> = { ...process.env, ...options.env };
    if (server) {
      env.STEWARD_URL = server.url;
      env.STEWARD_TOKEN = server.token;
    }
    execFile(STEWARD, args, { cwd: options.cwd ?? ROOT, env, timeout: 120_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
      done({ code, stdout, stderr });
    });
  });
}

export function cleanup(...dirs: string[]): void {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}

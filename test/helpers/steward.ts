// Real Steward processes for integration and fault tests: free ports, temp folders, clean-up.

import { type ChildProcess, execFile, spawn } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, readlinkSync, realpathSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import type { Event, StreamEvent } from "../../src/common/api/events.ts";
import type { Host } from "../../src/common/api/hosts.ts";
import type { Job, JobSummary, Task } from "../../src/common/api/jobs.ts";
import { removeAgentCgroups } from "./agent-cgroups.ts";
import { startedAgents } from "./started-agents.ts";

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
  /** Variables set for the process (through `env`), such as STEWARD_LAUNCHER. */
  env?: Record<string, string>;
}

/** A Steward process that exited while it was starting (its output is in the message). */
export class ProcessExitedError extends Error {}

/**
 * Starts a process on a free port, and again on another one if the port was taken between the
 * asking and the listening (EADDRINUSE); a port given by the caller is tried once.
 */
async function onFreePort<T>(given: number | undefined, start: (port: number) => Promise<T>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const port = given ?? (await freePort());
    try {
      return await start(port);
    } catch (error) {
      const taken = error instanceof ProcessExitedError && error.message.includes("EADDRINUSE");
      if (!taken || given !== undefined || attempt >= 3) throw error;
    }
  }
}

/** `steward up` as a real process; resolves once it answers with its admin token and the agents are attached. */
export async function startUp(options: UpOptions = {}): Promise<StewardProcess> {
  const data = options.data ?? tempDir();
  return onFreePort(options.port, (port) => startUpOn(data, port, options));
}

async function startUpOn(data: string, port: number, options: UpOptions): Promise<StewardProcess> {
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
  const env = Object.entries(options.env ?? {}).map(([name, value]) => `${name}=${value}`);
  const up = await startProcess(args, {
    data,
    port,
    agents,
    ...(env.length ? { prefix: ["env", ...env] } : {}),
  });
  // Its agents' work folders, as `up` makes them (src/daemons/commands/up.ts).
  for (let i = 1; i <= agents; i++)
    startedAgents.push({
      name: `local-${i}`,
      work: join(realpathSync(data), "agents", `local-${i}`),
      child: up.child,
      ownWork: false,
    });
  return up;
}

export interface ServerProcessOptions {
  data?: string;
  port?: number;
  heartbeatSeconds?: number;
  hostTimeoutSeconds?: number;
  args?: string[];
  /** Runs the server through this prefix (for example `ip netns exec NS`). */
  prefix?: string[];
  /** The address the test reaches it at (default 127.0.0.1; a namespace's address with `prefix`). */
  address?: string;
  /** bin/steward at another path (the checkout as another account reaches it: reachable-checkout.ts). */
  steward?: string;
}

/** `steward server` alone, on SQLite under `data`. */
export async function startServerProcess(
  options: ServerProcessOptions = {},
): Promise<StewardProcess & { joinToken: string }> {
  const data = options.data ?? tempDir();
  return onFreePort(options.port, (port) => startServerOn(data, port, options));
}

async function startServerOn(
  data: string,
  port: number,
  options: ServerProcessOptions,
): Promise<StewardProcess & { joinToken: string }> {
  const args = [
    "server",
    "--data",
    data,
    "--port",
    String(port),
    "--heartbeat-seconds",
    String(options.heartbeatSeconds ?? 1),
    "--host-timeout-seconds",
    String(options.hostTimeoutSeconds ?? 3),
    ...(options.args ?? []),
  ];
  const server = await startProcess(args, {
    data,
    port,
    agents: 0,
    prefix: options.prefix,
    address: options.address,
    steward: options.steward,
  });
  return { ...server, joinToken: readFileSync(join(data, "join-token"), "utf8").trim() };
}

export interface AgentProcess {
  name: string;
  work: string;
  child: ChildProcess;
  pid: number;
  output: () => string;
  /** kill -9 of the agent process alone: its attempts go on under their supervisors. */
  kill9(): Promise<void>;
  /** A host crash: kill -9 of the agent and every process below it (launcher, supervisors, jobs). */
  crash(): Promise<void>;
  stop(): Promise<void>;
}

export interface AgentProcessOptions {
  name: string;
  work?: string;
  slots?: number;
  servers: string[];
  joinToken: string;
  /** Runs the agent through this prefix (for example `ip netns exec NS`). */
  prefix?: string[];
  args?: string[];
}

export async function startAgentProcess(options: AgentProcessOptions): Promise<AgentProcess> {
  const work = options.work ?? tempDir(`steward-agent-${options.name}-`);
  const args = [
    "agent",
    "--server",
    options.servers.join(","),
    // An empty join token leaves it to the test's own flags (--token-file).
    ...(options.joinToken ? ["--token", options.joinToken] : []),
    "--name",
    options.name,
    "--slots",
    String(options.slots ?? 2),
    "--work",
    work,
    "--speed",
    "1",
    ...(options.args ?? []),
  ];
  const [command, ...rest] = options.prefix ? [...options.prefix, STEWARD, ...args] : [STEWARD, ...args];
  const { child, output, exited } = spawnCaptured(command, rest, "info");
  startedAgents.push({ name: options.name, work, child, ownWork: options.work === undefined });
  const pid = child.pid!;
  return {
    name: options.name,
    work,
    child,
    pid,
    output,
    async kill9() {
      child.kill("SIGKILL");
      await exited;
    },
    async crash() {
      // Freeze the whole tree first (a stopped process cannot fork), until no new process shows
      // up, then kill it all at once: like a host losing power, no supervisor lives on to record
      // an exit.
      const frozen = new Set<number>([pid]);
      killQuietly(pid, "SIGSTOP");
      for (let round = 0; round < 20; round++) {
        const fresh = [...frozen].flatMap(descendants).filter((found) => !frozen.has(found));
        if (fresh.length === 0) break;
        for (const found of fresh) {
          killQuietly(found, "SIGSTOP");
          frozen.add(found);
        }
      }
      for (const found of processesUnder(work)) frozen.add(found);
      for (const found of frozen) killQuietly(found, "SIGKILL");
      await exited;
      // Nothing of it runs any more: its cgroups go too (an agent started again makes new ones).
      await removeAgentCgroups(options.name, work);
    },
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill("SIGTERM");
      await Promise.race([exited, sleep(5000)]);
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await exited;
    },
  };
}

/** Every process below `root`, from /proc. */
export function descendants(root: number): number[] {
  const children = new Map<number, number[]>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, "utf8");
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      const list = children.get(ppid) ?? [];
      list.push(Number(entry));
      children.set(ppid, list);
    } catch {}
  }
  const found: number[] = [];
  const queue = [root];
  while (queue.length) {
    const pid = queue.shift()!;
    for (const child of children.get(pid) ?? []) {
      found.push(child);
      queue.push(child);
    }
  }
  return found;
}

/** Processes whose command line or working folder is under `dir` (supervisors and jobs of an agent). */
export function processesUnder(dir: string): number[] {
  const found: number[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      const cwd = readlinkSafe(`/proc/${entry}/cwd`);
      if (cmdline.includes(dir) || cwd?.startsWith(dir)) found.push(Number(entry));
    } catch {}
  }
  return found;
}

function readlinkSafe(path: string): string | null {
  try {
    return readlinkSync(path);
  } catch {
    return null;
  }
}

export function killQuietly(pid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(pid, signal);
  } catch {}
}

/** A child process whose stdout and stderr are kept for the test to read. */
function spawnCaptured(command: string, args: string[], logLevel: string) {
  const child = spawn(command, args, {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, STEWARD_LOG_LEVEL: logLevel },
  });
  let text = "";
  child.stdout?.on("data", (chunk) => {
    text += chunk;
  });
  child.stderr?.on("data", (chunk) => {
    text += chunk;
  });
  const exited = new Promise<void>((done) => child.once("exit", () => done()));
  return { child, exited, output: () => text };
}

async function startProcess(
  args: string[],
  at: { data: string; port: number; agents: number; prefix?: string[]; address?: string; steward?: string },
): Promise<StewardProcess> {
  const steward = at.steward ?? STEWARD;
  const [command, ...rest] = at.prefix ? [...at.prefix, steward, ...args] : [steward, ...args];
  const { child, output, exited } = spawnCaptured(command, rest, "warn");
  const url = `${args.includes("--tls-cert") ? "https" : "http"}://${at.address ?? "127.0.0.1"}:${at.port}`;
  const state = await waitFor(
    `steward at ${url}`,
    async () => {
      if (child.exitCode !== null || child.signalCode !== null) return "exited";
      // Its own answer: this data folder's admin token is accepted. A port taken meanwhile by another
      // process (the free port was free when asked) would answer otherwise, and this one exits.
      const token = readFileSync(join(at.data, "admin-token"), "utf8").trim();
      // A standby answers 307 (to its leader) or 503 (none yet): up too; only a stranger says 401.
      const response = await fetch(`${url}/api/v1/whoami`, {
        headers: { authorization: `Bearer ${token}` },
        redirect: "manual",
      });
      await response.arrayBuffer();
      return response.status === 401 ? null : "up";
    },
    30_000,
  );
  if (state === "exited")
    throw new ProcessExitedError(`steward exited ${child.exitCode ?? child.signalCode}: ${output()}`);
  const token = readFileSync(join(at.data, "admin-token"), "utf8").trim();
  const processHandle: StewardProcess = {
    url,
    port: at.port,
    data: at.data,
    token,
    child,
    output,
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
      const hosts = (await api(processHandle, "GET", "/api/v1/hosts")) as Host[];
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
  options: { cwd?: string; env?: Record<string, string>; prefix?: string[] } = {},
): Promise<CliResult> {
  return new Promise((done) => {
    const env: Record<string, string | undefined> = { ...process.env, ...options.env };
    if (server) {
      env.STEWARD_URL = server.url;
      env.STEWARD_TOKEN = server.token;
    }
    const [command, ...rest] = options.prefix ? [...options.prefix, STEWARD, ...args] : [STEWARD, ...args];
    execFile(command, rest, { cwd: options.cwd ?? ROOT, env, timeout: 120_000 }, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
      done({ code, stdout, stderr });
    });
  });
}

export function cleanup(...dirs: string[]): void {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
}

/** A job as GET /api/v1/jobs/{id} answers it by default: with its tasks and events. */
export type JobJson = Job & { tasks: Task[]; events: Event[] };

export async function getJob(server: { url: string; token: string }, id: string): Promise<JobJson> {
  return (await api(server, "GET", `/api/v1/jobs/${id}`)) as JobJson;
}

export async function waitForJobEnd(
  server: { url: string; token: string },
  id: string,
  timeoutMs = 60_000,
): Promise<JobJson> {
  return waitFor(
    `job ${id} to end`,
    async () => {
      const job = await getJob(server, id);
      return ["succeeded", "failed", "cancelled"].includes(job.state) ? job : null;
    },
    timeoutMs,
    200,
  );
}

/** One server-sent event as GET /api/v1/events writes it. */
export type ReceivedEvent = StreamEvent & {
  /** The `id:` line. */
  eventId: number;
};

export interface EventStreamReader {
  /** Every event received so far, in order. */
  readonly received: ReceivedEvent[];
  /** Waits until `check` holds for the events received so far. */
  until(what: string, check: (received: ReceivedEvent[]) => boolean, timeoutMs?: number): Promise<void>;
  close(): void;
}

/** Connects to GET /api/v1/events (with `query`, and a Last-Event-ID when given) and keeps reading. */
export async function openEventStream(
  server: { url: string; token: string },
  options: { query?: string; lastEventId?: number } = {},
): Promise<EventStreamReader> {
  const controller = new AbortController();
  const headers: Record<string, string> = { authorization: `Bearer ${server.token}` };
  if (options.lastEventId !== undefined) headers["last-event-id"] = String(options.lastEventId);
  const response = await fetch(`${server.url}/api/v1/events${options.query ? `?${options.query}` : ""}`, {
    headers,
    signal: controller.signal,
  });
  if (!response.ok || !response.body) throw new Error(`GET /api/v1/events: ${response.status}`);
  const received: ReceivedEvent[] = [];
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  void (async () => {
    let text = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      text += value;
      let end = text.indexOf("\n\n");
      while (end >= 0) {
        const block = text.slice(0, end);
        text = text.slice(end + 2);
        end = text.indexOf("\n\n");
        const fields = new Map<string, string>();
        for (const line of block.split("\n")) {
          if (line.startsWith(":")) continue;
          const colon = line.indexOf(": ");
          fields.set(line.slice(0, colon), line.slice(colon + 2));
        }
        if (fields.get("event") !== "job") continue;
        const data = JSON.parse(fields.get("data") ?? "null") as StreamEvent;
        received.push({ ...data, eventId: Number(fields.get("id")) });
      }
    }
  })().catch(() => {});
  return {
    received,
    async until(what, check, timeoutMs = 20_000) {
      await waitFor(what, () => check(received), timeoutMs, 50);
    },
    close() {
      controller.abort();
    },
  };
}

/** GET /api/v1/jobs page by page (`limit` each), following the Link rel="next" header. */
export async function jobPages(
  server: { url: string; token: string },
  query: string,
): Promise<{ pages: JobSummary[][]; links: (string | null)[] }> {
  const pages: JobSummary[][] = [];
  const links: (string | null)[] = [];
  let path: string | null = `/api/v1/jobs?${query}`;
  while (path) {
    const response = await fetch(server.url + path, { headers: { authorization: `Bearer ${server.token}` } });
    if (!response.ok) throw new Error(`GET ${path}: ${response.status} ${await response.text()}`);
    pages.push((await response.json()) as JobSummary[]);
    const link = response.headers.get("link");
    links.push(link);
    path = link ? (/^<([^>]+)>; rel="next"$/.exec(link)?.[1] ?? null) : null;
    if (pages.length > 10_000) throw new Error("too many pages");
  }
  return { pages, links };
}

/** The host credential an agent keeps in its work folder, once it has joined (it writes it after its welcome). */
export function hostCredentialOf(workDir: string): Promise<string> {
  return waitFor(`the host credential in ${workDir}`, () => {
    try {
      return readFileSync(join(workDir, "host-credential"), "utf8").trim() || null;
    } catch {
      return null;
    }
  });
}

/** An agent of `slots` slots joined to `server`, once the server lists it connected. */
export async function startAttachedAgent(
  server: StewardProcess & { joinToken: string },
  name: string,
  slots: number,
): Promise<AgentProcess> {
  const agent = await startAgentProcess({ name, slots, servers: [server.url], joinToken: server.joinToken });
  await waitFor(`agent ${name} attached`, async () => {
    const hosts = (await api(server, "GET", "/api/v1/hosts")) as { name: string; connected: boolean }[];
    return hosts.some((host) => host.name === name && host.connected);
  });
  return agent;
}

/** A user's API token made by the server's admin, as a handle for `api` and `cli` as that user. */
export async function userToken(
  server: { url: string; token: string },
  user: string,
): Promise<{ url: string; token: string }> {
  const { token } = (await api(server, "POST", "/api/v1/tokens", { user, role: "user" })) as {
    token: string;
  };
  return { url: server.url, token };
}

/** A server with agents attached and the tokens of two users, alice and bob: what users do, tested. */
export interface UsersCluster {
  /** The server; a test that restarts it puts the new one here, for stop(). */
  server: StewardProcess & { joinToken: string };
  agents: AgentProcess[];
  alice: { url: string; token: string };
  bob: { url: string; token: string };
  /** A folder of the test's own (markers, job files), removed at stop. */
  folder: string;
  /** Cancels the jobs named (left running by a failed test), stops everything and removes its folders. */
  stop(cancel?: readonly string[]): Promise<void>;
}

export async function startUsersCluster(
  agentNames: readonly string[],
  slots: number,
  folderPrefix: string,
): Promise<UsersCluster> {
  const server = await startServerProcess();
  const agents: AgentProcess[] = [];
  for (const name of agentNames) agents.push(await startAttachedAgent(server, name, slots));
  const cluster: UsersCluster = {
    server,
    agents,
    alice: await userToken(server, "alice"),
    bob: await userToken(server, "bob"),
    folder: tempDir(folderPrefix),
    async stop(cancel = []) {
      const now = cluster.server;
      for (const id of cancel) await api(now, "POST", `/api/v1/jobs/${id}/cancel`, {}).catch(() => {});
      for (const agent of agents) await agent.stop();
      await now.stop();
      cleanup(now.data, cluster.folder, ...agents.map((agent) => agent.work));
    },
  };
  return cluster;
}

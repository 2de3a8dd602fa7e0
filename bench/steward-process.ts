// Starts `bin/steward up` as a child process on a free port in a fresh data folder, waits until it
// answers (and its agents are attached), and takes it down again: SIGTERM, then SIGKILL, then the
// folder goes. Every child is tracked so that a failing or interrupted run still cleans up.

import { type ChildProcess, spawn } from "node:child_process";
import {
  closeSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
} from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Api } from "./api.ts";
import { progress, REPOSITORY } from "./benchmark.ts";
import { formatSummary, summariseProfile } from "./profile-summary.ts";

/** Where CPU profiles are kept after their Steward's folder is removed. */
export const PROFILE_DIR = join(tmpdir(), "steward-bench-profiles");
const STEWARD = join(REPOSITORY, "bin", "steward");
const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;

export interface StewardOptions {
  /** A name for progress lines and the temporary folder. */
  label: string;
  agents: number;
  slots: number;
  /**
   * Profile the Steward process (V8 CPU profile, written when it exits): on stop, the profile is
   * copied to PROFILE_DIR and summarised on stderr.
   */
  cpuProf?: boolean;
  /** Leave the folder in place after stop (the path is printed on stderr). */
  keep?: boolean;
  /** More `steward up` flags. */
  args?: string[];
  env?: Record<string, string>;
}

export interface Steward {
  label: string;
  url: string;
  port: number;
  token: string;
  pid: number;
  /** The temporary folder: `data/` (the data folder), `steward.log`, `profile/`. */
  root: string;
  dataDir: string;
  api: Api;
  /** CPU seconds used so far by the Steward process (Linux /proc; null elsewhere). */
  cpuSeconds(): CpuSeconds | null;
  /** A counter or gauge from GET /metrics (the first sample of that name), or null. */
  metric(name: string): Promise<number | null>;
  /** Stops the process and removes its folder; returns the CPU profiles kept, if profiling. */
  stop(): Promise<string[]>;
}

export interface CpuSeconds {
  /** The process itself, user and system. */
  user: number;
  system: number;
  /** Its children that have been waited for (the jobs' processes), user + system. */
  children: number;
}

/** utime, stime, cutime, cstime of /proc/PID/stat, in clock ticks (100 a second on Linux). */
export function processCpuSeconds(pid: number): CpuSeconds | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces: count the fields after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    const ticks = (i: number) => Number(fields[i - 3]) / 100;
    return { user: ticks(14), system: ticks(15), children: ticks(16) + ticks(17) };
  } catch {
    return null;
  }
}

interface Live {
  child: ChildProcess;
  root: string;
  keep: boolean;
}

const live = new Set<Live>();

/** Other sets of processes a benchmark started (see steward-cluster.ts), cleaned up alongside. */
/**
 * Polls GET /healthz until it answers. `failure` says why to give up at once (the process exited),
 * `context` adds to the time-out message.
 */
export async function waitForHealth(
  url: string,
  what: string,
  failure: () => string | null,
  context: () => string = () => "",
): Promise<void> {
  const started = performance.now();
  for (;;) {
    const reason = failure();
    if (reason) throw new Error(`${what} ${reason}`);
    if (performance.now() - started > READY_TIMEOUT_MS) {
      throw new Error(`${what} did not answer /healthz in ${READY_TIMEOUT_MS} ms${context()}`);
    }
    const ok = await fetch(`${url}/healthz`)
      .then(async (response) => {
        await response.arrayBuffer();
        return response.ok;
      })
      .catch(() => false);
    if (ok) return;
    await sleep(50);
  }
}

export interface Tracked {
  /** Stops its processes and removes its folder. */
  stop(): Promise<unknown>;
  /** The same with SIGKILL and nothing asynchronous (on process exit). */
  stopSync(): void;
}

const tracked = new Set<Tracked>();

/** Has `stopAllStewards` and `killAllStewardsSync` clean up after `entry` too; returns the untrack. */
export function track(entry: Tracked): () => void {
  tracked.add(entry);
  return () => tracked.delete(entry);
}

/** A port nobody listens on right now: listen on port 0, read the port, close. */
export function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      const port = typeof address === "object" && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

export function tail(path: string, lines = 20): string {
  try {
    return readFileSync(path, "utf8").trimEnd().split("\n").slice(-lines).join("\n");
  } catch {
    return "(no log)";
  }
}

/**
 * Processes left behind in a Steward's folder: agents start jobs through supervisors that are
 * meant to outlive the agent, so stopping `up` may leave them (and their jobs) running. They are
 * found by their command line or working folder naming our unique temporary folder.
 */
function leftovers(root: string): number[] {
  const pids: number[] = [];
  let entries: string[] = [];
  try {
    entries = readdirSync("/proc");
  } catch {
    return pids;
  }
  for (const name of entries) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      const command = readFileSync(`/proc/${name}/cmdline`, "utf8");
      const cwd = readlinkSync(`/proc/${name}/cwd`);
      if (command.includes(root) || cwd === root || cwd.startsWith(`${root}/`)) pids.push(Number(name));
    } catch {
      // Gone already, or not ours to read.
    }
  }
  return pids;
}

/** Copies the V8 CPU profiles written into `profileDir` to PROFILE_DIR and summarises them on stderr. */
export function keepProfiles(label: string, profileDir: string, tag: string): string[] {
  const profiles: string[] = [];
  let written: string[] = [];
  try {
    written = readdirSync(profileDir).filter((name) => name.endsWith(".cpuprofile"));
  } catch {}
  mkdirSync(PROFILE_DIR, { recursive: true });
  for (const name of written) {
    const kept = join(PROFILE_DIR, `${label}-${tag}-${name}`);
    copyFileSync(join(profileDir, name), kept);
    profiles.push(kept);
    progress(`${label}: CPU profile ${kept}\n${formatSummary(label, summariseProfile(kept, 20))}`);
  }
  if (written.length === 0) progress(`${label}: no CPU profile was written`);
  return profiles;
}

export function killLeftovers(label: string, root: string): void {
  const pids = leftovers(root);
  if (pids.length === 0) return;
  progress(`${label}: killing ${pids.length} process(es) left in ${root}: ${pids.join(" ")}`);
  for (const pid of pids) {
    try {
      process.kill(pid, "SIGKILL");
    } catch {}
  }
}

export function exited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

export function waitForExit(child: ChildProcess, timeoutMs: number): Promise<boolean> {
  if (exited(child)) return Promise.resolve(true);
  return new Promise((resolveExit) => {
    const timer = setTimeout(() => {
      child.off("exit", onExit);
      resolveExit(false);
    }, timeoutMs);
    const onExit = () => {
      clearTimeout(timer);
      resolveExit(true);
    };
    child.once("exit", onExit);
  });
}

/** The value of the series `name` (its first sample, any labels) in a /metrics text, or null. */
export function metricIn(text: string, name: string): number | null {
  const match = new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, "m").exec(text);
  return match ? Number(match[1]) : null;
}

export async function startSteward(options: StewardOptions): Promise<Steward> {
  const root = mkdtempSync(join(tmpdir(), `steward-bench-${options.label}-`));
  const dataDir = join(root, "data");
  const logPath = join(root, "steward.log");
  const profileDir = join(root, "profile");
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env: Record<string, string | undefined> = { ...process.env, ...options.env };
  if (options.cpuProf) {
    env.NODE_OPTIONS = [env.NODE_OPTIONS, "--cpu-prof", `--cpu-prof-dir=${profileDir}`]
      .filter(Boolean)
      .join(" ");
  }
  const args = [
    "up",
    "--data",
    dataDir,
    "--port",
    String(port),
    "--agents",
    String(options.agents),
    "--slots",
    String(options.slots),
    ...(options.args ?? []),
  ];
  // The log goes straight to a file: piping it through this process would cost the child nothing
  // but would cost the benchmark's own event loop.
  const log = openSync(logPath, "a");
  const child = spawn(STEWARD, args, { cwd: REPOSITORY, env, stdio: ["ignore", log, log] });
  closeSync(log);
  const entry: Live = { child, root, keep: !!options.keep };
  live.add(entry);
  child.once("error", () => {});
  let stopping = false;
  let reported = false;
  child.once("exit", (code, signal) => {
    if (!stopping) {
      reported = true;
      progress(
        `${options.label}: steward exited unexpectedly (${code ?? signal}); its log ends:\n${tail(logPath)}`,
      );
    }
  });

  const stop = async (): Promise<string[]> => {
    stopping = true;
    let escalated = false;
    if (!exited(child)) {
      child.kill("SIGTERM");
      if (!(await waitForExit(child, STOP_TIMEOUT_MS))) {
        progress(`${options.label}: steward did not stop within ${STOP_TIMEOUT_MS} ms; SIGKILL`);
        escalated = true;
        child.kill("SIGKILL");
        await waitForExit(child, STOP_TIMEOUT_MS);
      }
    }
    // A clean shutdown exits 0; anything else (it had died already, or crashed on the way out) is news.
    if (!escalated && !reported && child.exitCode !== 0) {
      progress(
        `${options.label}: steward ended with ${child.exitCode ?? child.signalCode}; its log ends:\n${tail(logPath)}`,
      );
    }
    live.delete(entry);
    killLeftovers(options.label, root);
    const profiles = options.cpuProf ? keepProfiles(options.label, profileDir, `${child.pid}`) : [];
    if (entry.keep) progress(`${options.label}: kept ${root}`);
    else rmSync(root, { recursive: true, force: true });
    return profiles;
  };

  try {
    const started = performance.now();
    await waitForHealth(
      url,
      `steward up (${options.label})`,
      () => {
        if (exited(child)) return `exited with ${child.exitCode ?? child.signalCode}:\n${tail(logPath)}`;
        return null;
      },
      () => `:\n${tail(logPath)}`,
    );
    const token = readFileSync(join(dataDir, "admin-token"), "utf8").trim();
    const api = new Api(url, token);
    while (options.agents > 0) {
      const hosts = await api.hosts();
      if (hosts.filter((host) => host.state === "ready" && host.connected).length >= options.agents) break;
      if (exited(child)) throw new Error(`steward up (${options.label}) exited:\n${tail(logPath)}`);
      if (performance.now() - started > READY_TIMEOUT_MS) {
        throw new Error(`steward up (${options.label}): agents not attached in ${READY_TIMEOUT_MS} ms`);
      }
      await sleep(50);
    }
    progress(
      `${options.label}: steward up pid ${child.pid} at ${url}, ${options.agents} agent(s) of ${options.slots} slots, ready in ${Math.round(performance.now() - started)} ms`,
    );
    return {
      label: options.label,
      url,
      port,
      token,
      pid: child.pid ?? 0,
      root,
      dataDir,
      api,
      cpuSeconds: () => (child.pid && !exited(child) ? processCpuSeconds(child.pid) : null),
      async metric(name: string) {
        // /metrics takes a token of any role (unless the server runs with --metrics-open).
        const response = await fetch(`${url}/metrics`, { headers: { authorization: `Bearer ${token}` } });
        return metricIn(await response.text(), name);
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Stops every child still running (after a failure). */
export async function stopAllStewards(): Promise<void> {
  const others = [...tracked];
  tracked.clear();
  await Promise.all([
    ...others.map((entry) => entry.stop().catch(() => {})),
    ...[...live].map(async (entry) => {
      if (!exited(entry.child)) {
        entry.child.kill("SIGTERM");
        if (!(await waitForExit(entry.child, STOP_TIMEOUT_MS))) entry.child.kill("SIGKILL");
      }
      live.delete(entry);
      killLeftovers("cleanup", entry.root);
      if (!entry.keep) rmSync(entry.root, { recursive: true, force: true });
    }),
  ]);
}

/** Last resort on process exit: nothing asynchronous is possible any more. */
export function killAllStewardsSync(): void {
  for (const entry of tracked) {
    try {
      entry.stopSync();
    } catch {}
  }
  tracked.clear();
  for (const entry of live) {
    if (!exited(entry.child)) entry.child.kill("SIGKILL");
    killLeftovers("exit", entry.root);
    if (!entry.keep) rmSync(entry.root, { recursive: true, force: true });
  }
  live.clear();
}

// Steward as separate processes: one `steward server` and N `steward agent`s, each its own Node
// process with its own log, all under one temporary folder. Unlike `steward up`, an agent here can
// be crashed (kill -9 with everything below it) and started again with the same name and work
// folder, as a host that dies and comes back would.

import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { Api } from "./api.ts";
import { progress, REPOSITORY } from "./benchmark.ts";
import {
  exited,
  freePort,
  keepProfiles,
  killLeftovers,
  tail,
  track,
  waitForExit,
  waitForHealth,
} from "./steward-process.ts";

const STEWARD = join(REPOSITORY, "bin", "steward");
const READY_TIMEOUT_MS = 30_000;
const STOP_TIMEOUT_MS = 10_000;

export interface ClusterOptions {
  label: string;
  agents: number;
  slots: number;
  /** More `steward server` flags (e.g. --heartbeat-seconds). */
  serverArgs?: string[];
  /** More `steward agent` flags (e.g. --speed). */
  agentArgs?: string[];
  /**
   * The URL the agent `name` is given as its `--server` (default: the server's own): a benchmark
   * that puts something between them (a forwarder that slows the link) answers its address.
   */
  agentServer?: (serverUrl: string, name: string) => Promise<string>;
  cpuProf?: boolean;
  keep?: boolean;
}

export interface AgentProcess {
  /** Its `--name`, which is the host's name. */
  readonly name: string;
  /** Its `--work` folder. */
  readonly workDir: string;
  readonly pid: number;
  /**
   * A host crash: SIGKILL to the agent, every process below it (found through the ppid of every
   * /proc/PID/stat, before anything is killed) and every process whose command line names its
   * work folder (job supervisors and jobs). Returns the pids killed, the agent's first.
   */
  crash(): Promise<number[]>;
  /** Starts the agent again with the same name and work folder (after a crash). */
  restart(): Promise<void>;
}

export interface Cluster {
  label: string;
  url: string;
  root: string;
  api: Api;
  adminToken: string;
  joinToken: string;
  agents: AgentProcess[];
  /** The `steward server` process's pid (its CPU time is the broker's alone). */
  serverPid: number;
  agent(name: string): AgentProcess;
  /** Waits until these hosts (all by default) are `ready` and connected. */
  waitForHosts(names?: string[], timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

interface Child {
  process: ChildProcess;
  /** Set while we kill or stop it on purpose: its exit is no news then. */
  expected: boolean;
}

/** Every process's parent, from /proc/PID/stat (field 4, after the parenthesised command name). */
function parents(): Map<number, number> {
  const ppid = new Map<number, number>();
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = readFileSync(`/proc/${name}/stat`, "utf8");
      ppid.set(Number(name), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
    } catch {
      // Gone already.
    }
  }
  return ppid;
}

/** `pid` and all its descendants, found before anything is killed (a killed parent's children move to init). */
export function processTree(pid: number): number[] {
  const children = new Map<number, number[]>();
  for (const [child, parent] of parents()) {
    const list = children.get(parent);
    if (list) list.push(child);
    else children.set(parent, [child]);
  }
  const tree = [pid];
  for (let i = 0; i < tree.length; i++) tree.push(...(children.get(tree[i]) ?? []));
  return tree;
}

/** Processes whose command line mentions `text` (NUL-separated arguments joined as they are). */
export function processesNaming(text: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name) || Number(name) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, "utf8").includes(text)) found.push(Number(name));
    } catch {}
  }
  return found;
}

export async function startCluster(options: ClusterOptions): Promise<Cluster> {
  const root = mkdtempSync(join(tmpdir(), `steward-bench-${options.label}-`));
  const dataDir = join(root, "data");
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const children = new Set<Child>();
  let stopping = false;

  const spawnLogged = (name: string, args: string[]): Child => {
    const env: Record<string, string | undefined> = { ...process.env };
    if (options.cpuProf) {
      env.NODE_OPTIONS = [env.NODE_OPTIONS, "--cpu-prof", `--cpu-prof-dir=${join(root, "profile", name)}`]
        .filter(Boolean)
        .join(" ");
    }
    const logPath = join(root, `${name}.log`);
    const log = openSync(logPath, "a");
    const child: Child = {
      process: spawn(STEWARD, args, { cwd: root, env, stdio: ["ignore", log, log] }),
      expected: false,
    };
    closeSync(log);
    children.add(child);
    child.process.once("error", () => {});
    child.process.once("exit", (code, signal) => {
      children.delete(child);
      if (!child.expected && !stopping) {
        progress(
          `${options.label}: ${name} exited unexpectedly (${code ?? signal}); its log ends:\n${tail(logPath)}`,
        );
      }
    });
    return child;
  };

  let server: Child | null = null;
  const stopChild = async (child: Child) => {
    if (exited(child.process)) return;
    child.process.kill("SIGTERM");
    if (!(await waitForExit(child.process, STOP_TIMEOUT_MS))) {
      progress(
        `${options.label}: pid ${child.process.pid} did not stop within ${STOP_TIMEOUT_MS} ms; SIGKILL`,
      );
      child.process.kill("SIGKILL");
      await waitForExit(child.process, STOP_TIMEOUT_MS);
    }
  };
  const stopSync = () => {
    stopping = true;
    for (const child of children) if (!exited(child.process)) child.process.kill("SIGKILL");
    killLeftovers(options.label, root);
    if (!options.keep) rmSync(root, { recursive: true, force: true });
  };
  let untrack = () => {};
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    untrack();
    // Agents first, so that they do not spend the server's last seconds reconnecting.
    const agents = [...children].filter((child) => child !== server);
    await Promise.all(agents.map((child) => stopChild(child)));
    if (server) await stopChild(server);
    killLeftovers(options.label, root);
    if (options.cpuProf) {
      let names: string[] = [];
      try {
        names = readdirSync(join(root, "profile"));
      } catch {}
      for (const name of names) keepProfiles(`${options.label}-${name}`, join(root, "profile", name), "p");
    }
    if (options.keep) progress(`${options.label}: kept ${root}`);
    else rmSync(root, { recursive: true, force: true });
  };
  untrack = track({ stop, stopSync });

  try {
    const started = performance.now();
    server = spawnLogged("server", [
      "server",
      "--data",
      dataDir,
      "--port",
      String(port),
      ...(options.serverArgs ?? []),
    ]);
    const serverProcess = server.process;
    await waitForHealth(url, `steward server (${options.label})`, () =>
      exited(serverProcess) ? "exited" : null,
    );
    const adminToken = readFileSync(join(dataDir, "admin-token"), "utf8").trim();
    const joinToken = readFileSync(join(dataDir, "join-token"), "utf8").trim();
    const api = new Api(url, adminToken);

    const agents: AgentProcess[] = [];
    for (let i = 1; i <= options.agents; i++) {
      const name = `${options.label}-${i}`;
      const workDir = join(root, "agents", name);
      mkdirSync(workDir, { recursive: true });
      const args = [
        "agent",
        "--server",
        options.agentServer ? await options.agentServer(url, name) : url,
        "--token",
        joinToken,
        "--name",
        name,
        "--slots",
        String(options.slots),
        "--work",
        workDir,
        ...(options.agentArgs ?? []),
      ];
      let child = spawnLogged(name, args);
      agents.push({
        name,
        workDir,
        get pid() {
          return child.process.pid ?? 0;
        },
        async crash() {
          const pid = child.process.pid;
          if (pid === undefined || exited(child.process)) throw new Error(`agent ${name} is not running`);
          child.expected = true;
          const victims = [...new Set([...processTree(pid), ...processesNaming(workDir)])];
          for (const victim of victims) {
            try {
              process.kill(victim, "SIGKILL");
            } catch {}
          }
          await waitForExit(child.process, STOP_TIMEOUT_MS);
          return victims;
        },
        async restart() {
          if (!exited(child.process)) throw new Error(`agent ${name} is still running`);
          child = spawnLogged(name, args);
        },
      });
    }

    const waitForHosts = async (names = agents.map((agent) => agent.name), timeoutMs = READY_TIMEOUT_MS) => {
      const start = performance.now();
      for (;;) {
        const hosts = await api.hosts();
        const ready = new Set(hosts.filter((h) => h.state === "ready" && h.connected).map((h) => h.name));
        if (names.every((name) => ready.has(name))) return;
        if (performance.now() - start > timeoutMs) {
          throw new Error(`${options.label}: hosts ${names.join(", ")} not all ready in ${timeoutMs} ms`);
        }
        await sleep(50);
      }
    };
    await waitForHosts();
    progress(
      `${options.label}: steward server at ${url} and ${options.agents} agent(s) of ${options.slots} slots, ready in ${Math.round(performance.now() - started)} ms`,
    );
    return {
      label: options.label,
      url,
      root,
      api,
      adminToken,
      joinToken,
      agents,
      serverPid: serverProcess.pid ?? 0,
      agent(name: string) {
        const agent = agents.find((a) => a.name === name);
        if (!agent) throw new Error(`${options.label}: no agent ${name}`);
        return agent;
      },
      waitForHosts,
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

// Steward in high availability, as separate processes: N `steward server`s on one PostgreSQL
// schema (one leads, the others stand by) and M `steward agent`s, each agent on a "machine" of its
// own (a network namespace, test/helpers/netns.ts) where namespaces can be made, else on loopback.
// Between the agents and each broker stands a TCP forwarder (test/helpers/tcp-forwarder.ts) that
// the benchmark switches to slow or reset the links, for every connection at once; each broker
// advertises its forwarder's address, so that a standby sends agents to the leader through it too.
// The brokers themselves listen on 127.0.0.1 and reach the database directly.

import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { makeTestNetwork, namespacesUnavailable, type TestNetwork } from "../test/helpers/netns.ts";
import { startForwarder, type TcpForwarder } from "../test/helpers/tcp-forwarder.ts";
import { progress, REPOSITORY } from "./benchmark.ts";
import {
  exited,
  freePort,
  killLeftovers,
  tail,
  track,
  waitForExit,
  waitForHealth,
} from "./steward-process.ts";

const STEWARD = join(REPOSITORY, "bin", "steward");
const READY_TIMEOUT_MS = 60_000;
const STOP_TIMEOUT_MS = 10_000;
/** A broker started again that exits at once (its store unreachable) is started again this often, this many times. */
const RESTART_WAIT_MS = 2_000;
const RESTART_TRIES = 15;

export interface HaClusterOptions {
  label: string;
  /** The store URL, `?schema=` set. */
  storeUrl: string;
  brokers: number;
  agents: number;
  slots: number;
  /** Put each agent in a network namespace of its own, where that can be done. */
  namespaces: boolean;
  leaseSeconds: number;
  heartbeatSeconds: number;
  hostTimeoutSeconds: number;
  /** More variables for the agents (a preload through NODE_OPTIONS). */
  agentEnv?: Record<string, string>;
  keep?: boolean;
}

export interface HaBroker {
  index: number;
  /** Where the benchmark reaches it (127.0.0.1). */
  url: string;
  /** Where agents reach it: its forwarder. */
  advertised: string;
  pid(): number;
  alive(): boolean;
  kill9(): Promise<void>;
  /** Starts it again on the same port and data folder (it comes back as a standby). */
  restart(): Promise<void>;
}

export interface HaAgent {
  name: string;
  workDir: string;
  pid(): number;
}

export interface HaCluster {
  root: string;
  brokers: HaBroker[];
  agents: HaAgent[];
  /** One forwarder a broker, between the agents and it. */
  links: TcpForwarder[];
  /** "namespaces", or "loopback (why not namespaces)". */
  agentNetwork: string;
  adminToken: string;
  /** The broker that says it leads, or null. */
  leader(): Promise<HaBroker | null>;
  /** Waits until the leader lists every agent connected. */
  waitForHosts(timeoutMs?: number): Promise<void>;
  stop(): Promise<void>;
}

interface Child {
  process: ChildProcess;
  expected: boolean;
}

interface Health {
  role?: string;
}

async function healthOf(url: string): Promise<Health | null> {
  try {
    const response = await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) });
    return (await response.json()) as Health;
  } catch {
    return null;
  }
}

export async function startHaCluster(options: HaClusterOptions): Promise<HaCluster> {
  const root = mkdtempSync(join(tmpdir(), `steward-bench-${options.label}-`));
  const dataDir = join(root, "data");
  const children = new Set<Child>();
  const links: TcpForwarder[] = [];
  let network: TestNetwork | null = null;
  let stopping = false;

  const spawnLogged = (name: string, command: string[], env: Record<string, string> = {}): Child => {
    const logPath = join(root, `${name}.log`);
    const log = openSync(logPath, "a");
    const [file, ...args] = command;
    const child: Child = {
      process: spawn(file, args, { cwd: root, env: { ...process.env, ...env }, stdio: ["ignore", log, log] }),
      expected: false,
    };
    closeSync(log);
    children.add(child);
    child.process.once("error", () => {});
    child.process.once("exit", (code, signal) => {
      children.delete(child);
      if (!child.expected && !stopping)
        progress(
          `${options.label}: ${name} exited unexpectedly (${code ?? signal}); its log ends:\n${tail(logPath)}`,
        );
    });
    return child;
  };
  const stopChild = async (child: Child) => {
    child.expected = true;
    if (exited(child.process)) return;
    child.process.kill("SIGTERM");
    if (!(await waitForExit(child.process, STOP_TIMEOUT_MS))) {
      child.process.kill("SIGKILL");
      await waitForExit(child.process, STOP_TIMEOUT_MS);
    }
  };
  let brokerChildren: Child[] = [];
  const removeAll = () => {
    killLeftovers(options.label, root);
    if (options.keep) progress(`${options.label}: kept ${root}`);
    else rmSync(root, { recursive: true, force: true });
  };
  let untrack = () => {};
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    untrack();
    const agents = [...children].filter((child) => !brokerChildren.includes(child));
    await Promise.all(agents.map(stopChild));
    await Promise.all(brokerChildren.map(stopChild));
    await Promise.all(links.map((link) => link.close()));
    await network?.destroy();
    removeAll();
  };
  untrack = track({
    stop,
    stopSync: () => {
      stopping = true;
      for (const child of children) if (!exited(child.process)) child.process.kill("SIGKILL");
      removeAll();
    },
  });

  try {
    let agentNetwork = "namespaces";
    if (options.namespaces) {
      const unavailable = namespacesUnavailable();
      if (unavailable === null) {
        try {
          network = makeTestNetwork();
        } catch (error) {
          agentNetwork = `loopback (making namespaces failed: ${(error as Error).message})`;
        }
      } else agentNetwork = `loopback (${unavailable})`;
    } else agentNetwork = "loopback (namespaces not asked for)";
    const linkHost = network?.rootAddress ?? "127.0.0.1";

    const ports: number[] = [];
    for (let i = 0; i < options.brokers; i++) {
      const port = await freePort();
      ports.push(port);
      links.push(await startForwarder({ target: { host: "127.0.0.1", port }, listen: { host: linkHost } }));
    }
    const brokerCommand = (i: number) => [
      STEWARD,
      "server",
      "--data",
      dataDir,
      "--port",
      String(ports[i]),
      "--store",
      options.storeUrl,
      "--lease-seconds",
      String(options.leaseSeconds),
      "--heartbeat-seconds",
      String(options.heartbeatSeconds),
      "--host-timeout-seconds",
      String(options.hostTimeoutSeconds),
      "--advertise-url",
      `http://${linkHost}:${links[i].port}`,
    ];
    brokerChildren = [];
    const brokers: HaBroker[] = [];
    for (let i = 0; i < options.brokers; i++) {
      const url = `http://127.0.0.1:${ports[i]}`;
      const name = `broker${i + 1}`;
      brokerChildren[i] = spawnLogged(name, brokerCommand(i));
      await waitForHealth(url, `${options.label} ${name}`, () =>
        exited(brokerChildren[i].process) ? "exited" : null,
      );
      brokers.push({
        index: i,
        url,
        advertised: `http://${linkHost}:${links[i].port}`,
        pid: () => brokerChildren[i].process.pid ?? 0,
        alive: () => !exited(brokerChildren[i].process),
        async kill9() {
          brokerChildren[i].expected = true;
          brokerChildren[i].process.kill("SIGKILL");
          await waitForExit(brokerChildren[i].process, STOP_TIMEOUT_MS);
        },
        async restart() {
          if (!exited(brokerChildren[i].process)) throw new Error(`${name} is still running`);
          // As a service manager would (systemd's Restart=on-failure): a broker that cannot reach
          // its store at start exits, and is started again a little later.
          for (let tries = 1; ; tries++) {
            if (stopping) return;
            brokerChildren[i] = spawnLogged(name, brokerCommand(i));
            try {
              await waitForHealth(url, `${options.label} ${name} (again)`, () =>
                exited(brokerChildren[i].process) ? "exited" : null,
              );
              return;
            } catch (error) {
              if (tries >= RESTART_TRIES) throw error;
              await sleep(RESTART_WAIT_MS);
            }
          }
        },
      });
    }
    const adminToken = readFileSync(join(dataDir, "admin-token"), "utf8").trim();
    const joinToken = readFileSync(join(dataDir, "join-token"), "utf8").trim();

    const agents: HaAgent[] = [];
    for (let i = 1; i <= options.agents; i++) {
      const name = `${options.label}-${i}`;
      const workDir = join(root, "agents", name);
      mkdirSync(workDir, { recursive: true });
      const prefix = network ? network.machine(`a${i}`).prefix : [];
      const child = spawnLogged(
        name,
        [
          ...prefix,
          STEWARD,
          "agent",
          "--server",
          brokers.map((broker) => broker.advertised).join(","),
          "--token",
          joinToken,
          "--name",
          name,
          "--slots",
          String(options.slots),
          "--work",
          workDir,
          "--speed",
          "1",
        ],
        options.agentEnv,
      );
      agents.push({ name, workDir, pid: () => child.process.pid ?? 0 });
    }

    const leader = async () => {
      for (const broker of brokers) {
        if (broker.alive() && (await healthOf(broker.url))?.role === "leader") return broker;
      }
      return null;
    };
    const waitForHosts = async (timeoutMs = READY_TIMEOUT_MS) => {
      const deadline = performance.now() + timeoutMs;
      for (;;) {
        const lead = await leader();
        if (lead) {
          const answer = await fetch(`${lead.url}/api/v1/hosts`, {
            headers: { authorization: `Bearer ${adminToken}` },
          }).catch(() => null);
          const hosts = answer?.ok ? ((await answer.json()) as { name: string; connected: boolean }[]) : [];
          const connected = new Set(hosts.filter((host) => host.connected).map((host) => host.name));
          if (agents.every((agent) => connected.has(agent.name))) return;
        }
        if (performance.now() > deadline)
          throw new Error(`${options.label}: the agents are not all connected after ${timeoutMs} ms`);
        await sleep(200);
      }
    };
    await waitForHosts();
    progress(
      `${options.label}: ${options.brokers} brokers on PostgreSQL and ${options.agents} agents of ${options.slots} slots (${agentNetwork}) ready`,
    );
    return { root, brokers, agents, links, agentNetwork, adminToken, leader, waitForHosts, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

// A test network of "machines" on this one: network namespaces the test makes, on a private subnet
// (10.213.X.0/24) it makes too, joined by a switch: a bridge in a namespace of its own, so that the
// machine's firewall (bridge netfilter, FORWARD rules) is not in the way and not touched. The test
// process (the root namespace) has a port on the switch too, at 10.213.X.1. Every process of a
// multi-host test runs in its own namespace (`ip netns exec NS`) and talks over these addresses:
// a namespace has no route anywhere else and its loopback is its own, so nothing in it can reach
// 127.0.0.1 of the machine, nor any address this network did not make.
//
// A machine may have a host name: every machine of the network finds it in its /etc/hosts
// (`ip netns exec` puts /etc/netns/NS/hosts in /etc/hosts' place), so certificates can be made
// for names and checked against them. The test process itself stays in the root namespace, whose
// /etc/hosts a test must not change: its own lookups of the network's names are answered by the
// harness (a wrapper of dns.lookup in this process only, for those names only).
//
// Everything is removed after (processes left in the namespaces, the namespaces, the links, the
// hosts files), on destroy() and at the process's exit too. Where namespaces cannot be made (not root, no `ip`),
// openTestNetwork skips the test with the reason, and fails it under CI.

import { execFileSync } from "node:child_process";
import dns from "node:dns";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { createConnection, createServer, type Server, type Socket } from "node:net";
import type { TestContext } from "vitest";

/** One "machine": a namespace with one address on the test network. */
export interface Machine {
  /** The namespace's name (`ip netns exec NAME`). */
  name: string;
  /** Its address on the test network. */
  address: string;
  /** Its host name on the test network, when it was given one. */
  hostname?: string;
  /** The command prefix that runs a process on this machine. */
  prefix: string[];
  /** Cuts the machine off the network (its cable pulled): its link to the switch goes down. */
  cut(): void;
  /** Plugs it back in. */
  mend(): void;
}

/** A TCP connection as `ss` shows it from a machine. */
export interface Connection {
  local: string;
  peer: string;
}

export interface TestNetwork {
  /** The first three parts of the subnet, e.g. "10.213.7". */
  subnet: string;
  /** The test process's own address on the network (the root namespace's port on the switch). */
  rootAddress: string;
  /**
   * Adds a machine, with the next free address; with `hostname`, every machine (and the test
   * process) finds it by that name.
   */
  machine(label: string, options?: { hostname?: string }): Machine;
  /** Established TCP connections of the processes on `machine`. */
  connections(machine: Machine): Connection[];
  /** Whether an address is on this test network. */
  owns(address: string): boolean;
  /**
   * The established connections of `machine` that go anywhere but the test network or its own
   * loopback to itself, as "local -> peer" (none, in a multi-host test).
   */
  offNetwork(machine: Machine): string[];
  /**
   * Forwards TCP from rootAddress:port (a free one) to `target` in the root namespace (e.g. the
   * PostgreSQL server on 127.0.0.1:5432): how a machine reaches a service that listens on loopback.
   */
  forward(target: { host: string; port: number }): Promise<{ port: number }>;
  /** Kills what still runs in the namespaces and removes them and their links. */
  destroy(): Promise<void>;
}

const SUBNET_PREFIX = "10.213";

/** Runs `ip ARGS`; throws with its stderr. */
function ip(...args: string[]): string {
  return execFileSync("ip", args, { stdio: ["ignore", "pipe", "pipe"], encoding: "utf8" });
}

function quietly(work: () => unknown): void {
  try {
    work();
  } catch {}
}

/** Null when namespaces can be made here, otherwise why not. */
export function namespacesUnavailable(): string | null {
  if (process.platform !== "linux") return "network namespaces need Linux";
  if (process.getuid?.() !== 0) return "network namespaces need root";
  try {
    ip("-V");
  } catch {
    return "`ip` (iproute2) is not installed";
  }
  return null;
}

/** A third octet no address of this machine uses yet (another test run may hold one). */
function freeSubnet(): string {
  const used = ip("-4", "-o", "addr", "show");
  const start = process.pid % 250;
  for (let step = 0; step < 250; step++) {
    const third = ((start + step) % 250) + 2;
    if (!used.includes(` ${SUBNET_PREFIX}.${third}.`)) return `${SUBNET_PREFIX}.${third}`;
  }
  throw new Error(`no free ${SUBNET_PREFIX}.X.0/24 subnet`);
}

let made = 0;
const open = new Set<() => void>();

/** The names of the open test networks' machines, for the test process's own lookups. */
const testNames = new Map<string, string>();
const systemLookup = dns.lookup;

/** dns.lookup, answering the test networks' names from their table and any other from the system. */
function lookupWithTestNames(...args: unknown[]): void {
  const [hostname, second, third] = args as [string, unknown, unknown];
  const address = testNames.get(hostname.toLowerCase());
  if (address === undefined) {
    (systemLookup as (...rest: unknown[]) => void)(...args);
    return;
  }
  const options = (typeof second === "object" && second !== null ? second : {}) as dns.LookupOptions;
  const callback = (typeof second === "function" ? second : third) as (
    error: NodeJS.ErrnoException | null,
    address: string | dns.LookupAddress[],
    family?: number,
  ) => void;
  process.nextTick(() =>
    options.all ? callback(null, [{ address, family: 4 }]) : callback(null, address, 4),
  );
}

function nameForThisProcess(hostname: string, address: string): void {
  testNames.set(hostname.toLowerCase(), address);
  dns.lookup = lookupWithTestNames as typeof dns.lookup;
}

function forgetNamesForThisProcess(hostnames: Iterable<string>): void {
  for (const hostname of hostnames) testNames.delete(hostname.toLowerCase());
  if (testNames.size === 0) dns.lookup = systemLookup;
}
process.once("exit", () => {
  for (const remove of open) remove();
});

/** Makes a test network, or skips the test (fails it under CI) where namespaces cannot be made. */
export function openTestNetwork(context: TestContext): TestNetwork {
  const unavailable = namespacesUnavailable();
  let network: TestNetwork | null = null;
  let failure = unavailable;
  if (failure === null) {
    try {
      network = makeTestNetwork();
    } catch (error) {
      failure = `making the test network failed: ${(error as Error).message}`;
    }
  }
  if (network) return network;
  const message = `multi-host test needs network namespaces: ${failure}`;
  if (process.env.CI) throw new Error(message);
  context.skip(message);
  throw new Error(message);
}

/** Makes a test network (throws where namespaces cannot be made: see namespacesUnavailable). */
export function makeTestNetwork(): TestNetwork {
  // Interface names have at most 15 characters: "stw" + a short id + a role.
  const id = `${process.pid % 100000}${String.fromCharCode(97 + (made++ % 26))}`;
  const switchName = `stw-${id}-switch`;
  const namespaces: string[] = [];
  const links: string[] = [];
  const subnet = freeSubnet();
  const rootAddress = `${subnet}.1`;
  const forwarders: Server[] = [];
  const sockets = new Set<Socket>();

  const hostnames = new Map<string, string>();
  /** The namespaces of machines, whose /etc/hosts lists every name. */
  const named: string[] = [];
  const writeHostsFiles = () => {
    const lines = ["127.0.0.1 localhost", "::1 localhost"];
    for (const [hostname, address] of hostnames) lines.push(`${address} ${hostname}`);
    for (const namespace of named) {
      mkdirSync(`/etc/netns/${namespace}`, { recursive: true });
      writeFileSync(`/etc/netns/${namespace}/hosts`, `${lines.join("\n")}\n`);
    }
  };

  const removeAll = () => {
    forgetNamesForThisProcess(hostnames.keys());
    hostnames.clear();
    for (const namespace of named)
      quietly(() => rmSync(`/etc/netns/${namespace}`, { recursive: true, force: true }));
    named.length = 0;
    for (const namespace of [...namespaces].reverse()) {
      // What the test started there and left running (its own processes only: nothing else is in them).
      quietly(() => {
        for (const pid of ip("netns", "pids", namespace).split("\n").filter(Boolean))
          quietly(() => process.kill(Number(pid), "SIGKILL"));
      });
      quietly(() => ip("netns", "del", namespace));
    }
    // A veth pair goes with its namespace end; the root's own end is removed by name in case.
    for (const link of links) quietly(() => ip("link", "del", link));
    namespaces.length = 0;
    links.length = 0;
  };
  open.add(removeAll);

  /** A veth pair from namespace `where` (null: the root) to a port of the switch; `end` is its own side. */
  const plug = (where: string | null, end: string, address: string) => {
    const port = `${end}p`;
    ip("link", "add", end, "type", "veth", "peer", "name", port, "netns", switchName);
    if (where === null) links.push(end);
    else ip("link", "set", end, "netns", where);
    ip("-n", switchName, "link", "set", port, "master", "br0");
    ip("-n", switchName, "link", "set", port, "up");
    const inside = where === null ? [] : ["-n", where];
    ip(...inside, "addr", "add", `${address}/24`, "dev", end);
    ip(...inside, "link", "set", end, "up");
  };

  try {
    ip("netns", "add", switchName);
    namespaces.push(switchName);
    ip("-n", switchName, "link", "add", "br0", "type", "bridge");
    ip("-n", switchName, "link", "set", "br0", "up");

    plug(null, `stw${id}r`, rootAddress);
  } catch (error) {
    removeAll();
    open.delete(removeAll);
    throw error;
  }

  let next = 2;
  return {
    subnet,
    rootAddress,
    machine(label, options = {}) {
      const index = next++;
      const name = `stw-${id}-${label}`;
      const end = `stw${id}${index}`;
      const address = `${subnet}.${index}`;
      ip("netns", "add", name);
      namespaces.push(name);
      ip("-n", name, "link", "set", "lo", "up");
      plug(name, end, address);
      // Every machine has a hosts file of the network's names (written again as names are added),
      // made before anything runs there: `ip netns exec` mounts it when it starts a process.
      named.push(name);
      if (options.hostname) {
        hostnames.set(options.hostname, address);
        nameForThisProcess(options.hostname, address);
      }
      writeHostsFiles();
      return {
        name,
        address,
        ...(options.hostname ? { hostname: options.hostname } : {}),
        prefix: ["ip", "netns", "exec", name],
        cut: () => void ip("-n", name, "link", "set", end, "down"),
        mend: () => void ip("-n", name, "link", "set", end, "up"),
      };
    },
    connections(machine) {
      const text = ip("netns", "exec", machine.name, "ss", "-Htn", "state", "established");
      return text
        .split("\n")
        .filter(Boolean)
        .map((line) => {
          const fields = line.trim().split(/\s+/);
          return { local: fields[fields.length - 2], peer: fields[fields.length - 1] };
        });
    },
    owns(address) {
      return address.startsWith(`${subnet}.`);
    },
    offNetwork(machine) {
      const host = (address: string) => address.replace(/:\d+$/, "").replace(/^\[|\]$/g, "");
      return this.connections(machine)
        .filter(({ local, peer }) => host(local) !== host(peer) && !this.owns(host(peer)))
        .map(({ local, peer }) => `${machine.name}: ${local} -> ${peer}`);
    },
    async forward(target) {
      const server = createServer((incoming) => {
        const outgoing = createConnection(target);
        sockets.add(incoming);
        sockets.add(outgoing);
        const close = () => {
          incoming.destroy();
          outgoing.destroy();
          sockets.delete(incoming);
          sockets.delete(outgoing);
        };
        incoming.on("error", close).on("close", close);
        outgoing.on("error", close).on("close", close);
        incoming.pipe(outgoing);
        outgoing.pipe(incoming);
      });
      forwarders.push(server);
      await new Promise<void>((done, fail) => {
        server.once("error", fail);
        server.listen(0, rootAddress, () => done());
      });
      const address = server.address();
      return { port: typeof address === "object" && address ? address.port : 0 };
    },
    async destroy() {
      for (const socket of sockets) socket.destroy();
      await Promise.all(forwarders.map((server) => new Promise<void>((done) => server.close(() => done()))));
      removeAll();
      open.delete(removeAll);
    },
  };
}

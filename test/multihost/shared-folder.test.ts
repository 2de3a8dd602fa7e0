// A folder two "machines" (network namespaces) share, as a network filesystem would be: each agent
// runs in a mount namespace of its own where one backing folder is bind-mounted at the same path,
// and declares that path with --shared. Jobs run in place there on whichever host takes them, and
// what each writes is in the backing folder, while the same path outside the agents' namespaces
// stays empty (the files went through the machines' mounts, not a path both happen to see).

import { mkdirSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { openTestNetwork, type TestNetwork } from "../helpers/netns.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  freePort,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

let network: TestNetwork | null = null;
let servers: StewardProcess[] = [];
let agents: AgentProcess[] = [];
let dirs: string[] = [];

afterEach(async () => {
  for (const agent of agents) await agent.crash();
  for (const server of servers) await server.stop();
  await network?.destroy();
  cleanup(...agents.map((agent) => agent.work), ...servers.map((server) => server.data), ...dirs);
  network = null;
  servers = [];
  agents = [];
  dirs = [];
});

/** Mounts `backing` at `at` in the process's own mount namespace (`ip netns exec` gives it one), then runs the rest. */
function withMount(backing: string, at: string): string[] {
  return ["sh", "-c", 'mount --bind "$1" "$2" && shift 2 && exec "$@"', "mount-shared", backing, at];
}

it("jobs run in place on a folder two machines mount, on whichever host takes them", async (context) => {
  const net = openTestNetwork(context);
  network = net;
  const root = tempDir("steward-multihost-shared-");
  dirs.push(root);
  // The backing folder (the file server's disk) and the path both machines mount it at.
  const backing = join(root, "export");
  const mountPoint = join(root, "mnt");
  mkdirSync(backing);
  mkdirSync(mountPoint);
  writeFileSync(join(backing, "mesh"), "21\n");

  const brokerHost = net.machine("broker");
  const hosts = [net.machine("node1"), net.machine("node2")];
  const port = await freePort();
  const advertised = `http://${brokerHost.address}:${port}`;
  const server = await startServerProcess({
    port,
    prefix: brokerHost.prefix,
    address: brokerHost.address,
    args: ["--host", "0.0.0.0", "--advertise-url", advertised],
  });
  servers.push(server);
  for (const [index, machine] of hosts.entries())
    agents.push(
      await startAgentProcess({
        name: `node${index + 1}`,
        slots: 1,
        servers: [advertised],
        joinToken: server.joinToken,
        prefix: [...machine.prefix, ...withMount(backing, mountPoint)],
        args: ["--shared", mountPoint],
      }),
    );
  await waitFor("both agents connected, sharing the folder", async () => {
    const list = (await api(server, "GET", "/api/v1/hosts")) as {
      connected: boolean;
      facts: { shared?: string[] };
    }[];
    return list.filter((host) => host.connected && host.facts.shared?.includes(mountPoint)).length === 2;
  });

  // Four one-second jobs on two one-slot hosts, each in a folder of its own under the shared one.
  const ids: string[] = [];
  for (let i = 0; i < 4; i++) {
    mkdirSync(join(backing, `case-${i}`));
    const job = await api(server, "POST", "/api/v1/jobs", {
      command: `sleep 1; read n < ../mesh; echo "$((n * ${i})) $STEWARD_HOST $PWD" > result`,
      workdir: join(mountPoint, `case-${i}`),
    });
    ids.push(job.id);
  }
  const ran = new Set<string>();
  for (const [i, id] of ids.entries()) {
    const job = await waitForJobEnd(server, id, 30_000);
    expect(job.state).toBe("succeeded");
    const host = job.tasks[0].attempts[0].host ?? "";
    ran.add(host);
    // Written on the host, through its mount, into the shared folder: seen on the file server's disk.
    expect(readFileSync(join(backing, `case-${i}`, "result"), "utf8")).toBe(
      `${21 * i} ${host} ${join(mountPoint, `case-${i}`)}\n`,
    );
  }
  expect(ran).toEqual(new Set(["node1", "node2"]));
  // Outside the machines' mounts the path is the empty folder it was.
  expect(readdirSync(mountPoint)).toEqual([]);
  for (const id of ids) expect(await api(server, "GET", `/api/v1/jobs/${id}/outputs`)).toEqual([]);
}, 90_000);

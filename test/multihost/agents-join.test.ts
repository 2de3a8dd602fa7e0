// Agents on two other "machines" (network namespaces) join a broker that listens on 0.0.0.0 and
// advertises its test-network address, and run jobs; nothing goes over the machine's loopback.

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
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

let network: TestNetwork | null = null;
let servers: StewardProcess[] = [];
let agents: AgentProcess[] = [];

afterEach(async () => {
  for (const agent of agents) await agent.crash();
  for (const server of servers) await server.stop();
  await network?.destroy();
  cleanup(...agents.map((agent) => agent.work), ...servers.map((server) => server.data));
  network = null;
  servers = [];
  agents = [];
});

it("agents in two namespaces join a broker on 0.0.0.0 by its advertised URL and run jobs", async (context) => {
  const net = openTestNetwork(context);
  network = net;
  const brokerHost = net.machine("broker");
  const hosts = [net.machine("agent1"), net.machine("agent2")];
  const port = await freePort();
  const advertised = `http://${brokerHost.address}:${port}`;
  const server = await startServerProcess({
    port,
    prefix: brokerHost.prefix,
    address: brokerHost.address,
    args: ["--host", "0.0.0.0", "--advertise-url", advertised],
  });
  servers.push(server);
  expect(server.url).toBe(advertised);
  const health = (await (await fetch(`${server.url}/healthz`)).json()) as { leader: string };
  expect(health.leader).toBe(advertised);

  for (const [index, machine] of hosts.entries()) {
    agents.push(
      await startAgentProcess({
        name: `agent${index + 1}`,
        slots: 1,
        servers: [advertised],
        joinToken: server.joinToken,
        prefix: machine.prefix,
      }),
    );
  }
  await waitFor("both agents connected", async () => {
    const list = (await api(server, "GET", "/api/v1/hosts")) as { connected: boolean }[];
    return list.filter((host) => host.connected).length === 2;
  });

  // Four one-second jobs on two one-slot hosts: both hosts run some.
  const ids: string[] = [];
  for (let i = 0; i < 4; i++)
    ids.push((await api(server, "POST", "/api/v1/jobs", { command: `sleep 1; echo job ${i}` })).id);
  const ran = new Set<string>();
  for (const id of ids) {
    const job = await waitForJobEnd(server, id, 30_000);
    expect(job.state).toBe("succeeded");
    for (const attempt of job.tasks[0].attempts) ran.add(attempt.host ?? "");
  }
  expect(ran).toEqual(new Set(["agent1", "agent2"]));

  // The agents were pointed at the broker's test-network address, and talk to nothing else.
  for (const agent of agents) expect(agent.child.spawnargs.join(" ")).not.toContain("127.0.0.1");
  for (const machine of hosts) {
    const connections = net.connections(machine);
    expect(connections.some((c) => c.peer === `${brokerHost.address}:${port}`)).toBe(true);
    expect(net.offNetwork(machine)).toEqual([]);
  }
  expect(net.offNetwork(brokerHost)).toEqual([]);
}, 60_000);

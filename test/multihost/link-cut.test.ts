// A machine whose network link is cut (its cable pulled, `ip link set down`): its host is lost
// after the host timeout and its task runs again on another machine.

import { afterEach, expect, it } from "vitest";
import { openTestNetwork, type TestNetwork } from "../helpers/netns.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  freePort,
  getJob,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  waitFor,
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

const HOST_TIMEOUT_SECONDS = 3;

it("a cut agent's task restarts on another machine within the host timeout", async (context) => {
  const net = openTestNetwork(context);
  network = net;
  const brokerHost = net.machine("broker");
  const first = net.machine("first");
  const second = net.machine("second");
  const port = await freePort();
  const advertised = `http://${brokerHost.address}:${port}`;
  const server = await startServerProcess({
    port,
    prefix: brokerHost.prefix,
    address: brokerHost.address,
    heartbeatSeconds: 1,
    hostTimeoutSeconds: HOST_TIMEOUT_SECONDS,
    args: ["--host", "0.0.0.0", "--advertise-url", advertised],
  });
  servers.push(server);
  const start = (name: string, prefix: string[]) =>
    startAgentProcess({ name, slots: 1, servers: [advertised], joinToken: server.joinToken, prefix });
  agents.push(await start("first", first.prefix));
  await waitFor("first connected", async () => (await api(server, "GET", "/api/v1/hosts")).length === 1);
  const { id } = await api(server, "POST", "/api/v1/jobs", { command: "sleep 30" });
  await waitFor("running on first", async () => {
    const attempt = (await getJob(server, id)).tasks[0].attempts[0];
    return attempt?.state === "running" && attempt.host === "first";
  });
  agents.push(await start("second", second.prefix));
  await waitFor("second connected", async () => {
    const list = (await api(server, "GET", "/api/v1/hosts")) as { connected: boolean }[];
    return list.filter((host) => host.connected).length === 2;
  });

  first.cut();
  const cutAt = Date.now();
  // Lost after the host timeout (the broker's check runs every heartbeat), then placed at once.
  const job = await waitFor(
    "attempt 2 running on second",
    async () => {
      const found = await getJob(server, id);
      return found.tasks[0].attempts[1]?.state === "running" ? found : null;
    },
    (HOST_TIMEOUT_SECONDS + 5) * 1000,
    100,
  );
  const restartedAfterMs = Date.now() - cutAt;
  expect(job.tasks[0].attempts[0]).toMatchObject({ host: "first", outcome: "lost" });
  expect(job.tasks[0].attempts[1].host).toBe("second");
  expect(restartedAfterMs).toBeGreaterThanOrEqual(HOST_TIMEOUT_SECONDS * 1000 - 1000);
  const hosts = (await api(server, "GET", "/api/v1/hosts")) as { name: string; connected: boolean }[];
  expect(hosts.find((host) => host.name === "first")?.connected).toBe(false);
  for (const machine of [brokerHost, second]) expect(net.offNetwork(machine)).toEqual([]);
  await api(server, "POST", `/api/v1/jobs/${id}/cancel`);
}, 60_000);

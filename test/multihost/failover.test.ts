// Two brokers on one PostgreSQL, each on its own "machine" (network namespace), listening on
// 0.0.0.0 and advertising their test-network addresses. kill -9 of the leader: the standby leads;
// the old leader, back, is standby, and its redirects name the new leader's advertised address
// (never 127.0.0.1); a client on a third machine that lists both reaches the standby first and is
// sent on to the leader; the agent on a fourth machine reconnects to the new leader and runs jobs.
//
// The PostgreSQL server listens on 127.0.0.1:5432 of the root namespace, which no namespace can
// reach: the test forwards TCP from its own test-network address (10.213.X.1) to it.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { openTestNetwork, type TestNetwork } from "../helpers/netns.ts";
import { dropSchema, freshSchema, PG_URL, postgresUnreachable, SAFE_PG_URL } from "../helpers/postgres.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  cli,
  freePort,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

const unreachable = await postgresUnreachable();

type Server = StewardProcess & { joinToken: string };
let network: TestNetwork | null = null;
const servers: Server[] = [];
const agents: AgentProcess[] = [];
const schemas: string[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const agent of agents.splice(0)) {
    await agent.crash();
    cleanup(agent.work);
  }
  for (const server of servers.splice(0)) await server.stop();
  await network?.destroy();
  network = null;
  cleanup(...dirs.splice(0));
  for (const schema of schemas.splice(0)) await dropSchema(schema);
});

interface Health {
  role: "leader" | "standby";
  leader: string | null;
}

async function health(url: string): Promise<Health | null> {
  try {
    return (await (await fetch(`${url}/healthz`, { signal: AbortSignal.timeout(2000) })).json()) as Health;
  } catch {
    return null;
  }
}

/** What a standby answers an API request with: its status and Location, the redirect not followed. */
async function redirectOf(server: Server): Promise<{ status: number; location: string | null }> {
  const response = await fetch(`${server.url}/api/v1/whoami`, {
    headers: { authorization: `Bearer ${server.token}` },
    redirect: "manual",
  });
  await response.arrayBuffer();
  return { status: response.status, location: response.headers.get("location") };
}

it("kill -9 of the leader: redirects name the new leader's advertised address, a client on another machine follows, the agent reconnects", async (context) => {
  if (unreachable) {
    if (process.env.CI) throw new Error(`PostgreSQL at ${SAFE_PG_URL} unreachable: ${unreachable}`);
    context.skip(`PostgreSQL at ${SAFE_PG_URL} unreachable: ${unreachable}`);
  }
  const net = openTestNetwork(context);
  network = net;
  const machines = [net.machine("broker1"), net.machine("broker2")];
  const agentHost = net.machine("agent");
  const clientHost = net.machine("client");

  // The brokers reach PostgreSQL through the test's own address on the test network.
  const pgAt = new URL(PG_URL);
  const forwarder = await net.forward({ host: pgAt.hostname, port: Number(pgAt.port || 5432) });
  const schema = freshSchema("steward_multihost");
  schemas.push(schema);
  const storeUrl = new URL(PG_URL);
  storeUrl.hostname = net.rootAddress;
  storeUrl.port = String(forwarder.port);
  storeUrl.searchParams.set("schema", schema);
  const data = tempDir("steward-multihost-");
  dirs.push(data);
  const ports = [await freePort(), await freePort()];
  const advertised = machines.map((machine, i) => `http://${machine.address}:${ports[i]}`);

  const startBroker = async (i: number): Promise<Server> => {
    const server = await startServerProcess({
      data,
      port: ports[i],
      prefix: machines[i].prefix,
      address: machines[i].address,
      heartbeatSeconds: 1,
      hostTimeoutSeconds: 5,
      args: [
        "--store",
        storeUrl.toString(),
        "--lease-seconds",
        "2",
        "--host",
        "0.0.0.0",
        "--advertise-url",
        advertised[i],
      ],
    });
    servers.push(server);
    return server;
  };
  const first = await startBroker(0);
  await waitFor("broker1 leads", async () => (await health(first.url))?.role === "leader");
  const second = await startBroker(1);
  await waitFor(
    "broker2 standby naming broker1",
    async () => (await health(second.url))?.leader === advertised[0],
  );
  expect(await redirectOf(second)).toEqual({ status: 307, location: `${advertised[0]}/api/v1/whoami` });

  const agent = await startAgentProcess({
    name: "worker",
    slots: 1,
    servers: advertised,
    joinToken: first.joinToken,
    prefix: agentHost.prefix,
  });
  agents.push(agent);
  await waitFor("agent on broker1", async () =>
    ((await api(first, "GET", "/api/v1/hosts")) as { connected: boolean }[]).some((host) => host.connected),
  );
  // And welcomed, with the host credential it must present to the next leader: a host shows
  // connected once its hello is handled, a moment before its welcome is committed and sent.
  await waitFor("the agent welcomed", () => agent.output().includes('"msg":"attached"'));

  await first.kill9();
  await waitFor("broker2 leads", async () => (await health(second.url))?.role === "leader", 15_000);
  await waitFor("agent back, on broker2", async () =>
    ((await api(second, "GET", "/api/v1/hosts")) as { name: string; connected: boolean }[]).some(
      (host) => host.name === "worker" && host.connected,
    ),
  );

  // broker1 back: standby now, sending the API to broker2's advertised address.
  servers.splice(servers.indexOf(first), 1);
  const again = await startBroker(0);
  await waitFor(
    "broker1 standby naming broker2",
    async () => (await health(again.url))?.leader === advertised[1],
  );
  const redirect = await redirectOf(again);
  expect(redirect).toEqual({ status: 307, location: `${advertised[1]}/api/v1/whoami` });
  expect(redirect.location).not.toContain("127.0.0.1");

  // A client on a third machine, the standby first in its list: sent to the leader, it submits a
  // job, which runs on the reconnected agent. The CLI follows a redirect only to a server of its
  // list, so a Location of 127.0.0.1 would have failed here.
  const file = join(data, "job.json");
  writeFileSync(file, JSON.stringify({ command: "echo after failover" }));
  const env = { STEWARD_URL: `${advertised[0]},${advertised[1]}`, STEWARD_TOKEN: second.token };
  const submitted = await cli(null, ["submit", file], { env, prefix: clientHost.prefix });
  expect(submitted.code, submitted.stderr).toBe(0);
  const id = submitted.stdout.trim();
  const job = await waitForJobEnd(second, id, 30_000);
  expect(job.state).toBe("succeeded");
  expect(job.tasks[0].attempts[0].host).toBe("worker");

  // Nothing on the brokers' or the client's machines went outside the test network.
  for (const machine of [...machines, agentHost]) expect(net.offNetwork(machine)).toEqual([]);
}, 60_000);

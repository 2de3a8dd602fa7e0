// TLS across machines: a private authority signs a certificate for the broker's host name (and
// nothing else: no IP address, no localhost). The broker, on its own machine, listens on 0.0.0.0
// and advertises https://NAME:PORT; agents on two other machines and a client on a fourth find it
// by that name (their /etc/hosts, as DNS would), trust the authority with --ca / STEWARD_CA, and a
// job with an input and an output goes through: the submit's upload, the agent's WSS connection,
// its input download and output upload, and the client's fetch of the output, all over HTTPS to the
// name. The same broker reached by its bare address is refused by the client and by an agent as a
// certificate for another name; a client without the authority is refused naming the certificate
// problem. No process talks to 127.0.0.1 but to itself.

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { trustAuthority } from "../../src/common/transport/trust.ts";
import { makeAuthority, makeCertificate, opensslUnavailable } from "../helpers/certificates.ts";
import { openTestNetwork, type TestNetwork } from "../helpers/netns.ts";
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

const unavailable = await opensslUnavailable();

let network: TestNetwork | null = null;
const servers: StewardProcess[] = [];
const agents: AgentProcess[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const agent of agents.splice(0)) {
    await agent.crash();
    cleanup(agent.work);
  }
  for (const server of servers.splice(0)) {
    await server.stop();
    cleanup(server.data);
  }
  await network?.destroy();
  network = null;
  cleanup(...dirs.splice(0));
});

it("agents and a client on other machines reach a broker over TLS by its host name, with a private authority; its bare address is refused", async (context) => {
  if (unavailable) {
    if (process.env.CI) throw new Error(unavailable);
    context.skip(unavailable);
  }
  const net = openTestNetwork(context);
  network = net;
  const brokerName = "broker.grid.test";
  const brokerHost = net.machine("broker", { hostname: brokerName });
  const hosts = [
    net.machine("node1", { hostname: "node1.grid.test" }),
    net.machine("node2", { hostname: "node2.grid.test" }),
  ];
  const login = net.machine("login", { hostname: "login.grid.test" });

  const pki = tempDir("steward-pki-");
  dirs.push(pki);
  const ca = await makeAuthority(pki, "Grid test authority");
  const { cert, key } = await makeCertificate(pki, "broker", { dns: [brokerName] });
  // The test process checks the broker too (its own requests, by the name the harness answers).
  trustAuthority(ca);

  const port = await freePort();
  const advertised = `https://${brokerName}:${port}`;
  const server = await startServerProcess({
    port,
    prefix: brokerHost.prefix,
    address: brokerName,
    args: ["--host", "0.0.0.0", "--advertise-url", advertised, "--tls-cert", cert, "--tls-key", key],
  });
  servers.push(server);
  expect(server.url).toBe(advertised);
  const health = (await (await fetch(`${advertised}/healthz`)).json()) as { leader: string };
  expect(health.leader).toBe(advertised);

  for (const [index, machine] of hosts.entries()) {
    agents.push(
      await startAgentProcess({
        name: `node${index + 1}`,
        slots: 1,
        servers: [advertised],
        joinToken: server.joinToken,
        prefix: machine.prefix,
        args: ["--ca", ca],
      }),
    );
  }
  await waitFor("both agents connected over WSS", async () => {
    const list = (await api(server, "GET", "/api/v1/hosts")) as { connected: boolean }[];
    return list.filter((host) => host.connected).length === 2;
  });

  // A job file with an input, submitted from the login machine, its output fetched back there.
  const folder = tempDir("steward-tls-job-");
  dirs.push(folder);
  writeFileSync(join(folder, "words.txt"), "over tls by name\n");
  writeFileSync(
    join(folder, "job.yaml"),
    "command: tr a-z A-Z < words.txt > shout.txt\ninputs: [words.txt]\noutputs: [shout.txt]\narray: { count: 2 }\n",
  );
  const env = { STEWARD_CA: ca };
  const client = { url: advertised, token: server.token };
  const submitted = await cli(client, ["submit", "job.yaml", "--wait"], {
    cwd: folder,
    env,
    prefix: login.prefix,
  });
  expect(submitted.code, submitted.stderr).toBe(0);
  const id = submitted.stdout.trim().split(/\s+/)[0];
  const job = await waitForJobEnd(server, id, 30_000);
  expect(job.state).toBe("succeeded");
  const fetched = join(folder, "fetched");
  mkdirSync(fetched);
  const fetch_ = await cli(client, ["fetch", id, "--to", fetched], {
    cwd: folder,
    env,
    prefix: login.prefix,
  });
  expect(fetch_.code, fetch_.stderr).toBe(0);
  expect(readFileSync(join(fetched, "0", "shout.txt"), "utf8")).toBe("OVER TLS BY NAME\n");

  // Without the authority: refused, naming the certificate problem.
  const untrusting = await cli(client, ["ps"], { prefix: login.prefix });
  expect(untrusting.code).not.toBe(0);
  expect(untrusting.stderr).toContain("presented a certificate this client does not trust");
  // The bare address: the certificate is for the name only, and the client says so.
  const byAddress = { url: `https://${brokerHost.address}:${port}`, token: server.token };
  const wrongName = await cli(byAddress, ["ps"], { env, prefix: login.prefix });
  expect(wrongName.code).not.toBe(0);
  expect(wrongName.stderr).toContain("ERR_TLS_CERT_ALTNAME_INVALID");
  // An agent pointed at the bare address does not join, and says why.
  const stray = await startAgentProcess({
    name: "stray",
    slots: 1,
    servers: [byAddress.url],
    joinToken: server.joinToken,
    prefix: hosts[0].prefix,
    args: ["--ca", ca],
  });
  agents.push(stray);
  await waitFor("the agent at the bare address to name the certificate problem", async () =>
    stray.output().includes("ERR_TLS_CERT_ALTNAME_INVALID"),
  );
  const names = ((await api(server, "GET", "/api/v1/hosts")) as { name: string }[]).map((host) => host.name);
  expect(names).not.toContain("stray");

  // Everything went over the test network: the agents to the broker's address and port.
  for (const agent of agents.slice(0, 2)) expect(agent.child.spawnargs.join(" ")).not.toContain("127.0.0.1");
  for (const machine of hosts) {
    expect(net.connections(machine).some((c) => c.peer === `${brokerHost.address}:${port}`)).toBe(true);
    expect(net.offNetwork(machine)).toEqual([]);
  }
  expect(net.offNetwork(brokerHost)).toEqual([]);
  expect(net.offNetwork(login)).toEqual([]);
}, 90_000);

// TLS: a server with --tls-cert/--tls-key serves HTTPS and WSS on its port; the CLI and an agent
// work with --ca (or STEWARD_CA) for a private authority, and without it fail naming the
// certificate problem; plain HTTP to the TLS port fails with a message that says to use https.
// The certificates are made here with openssl (a private authority and a server certificate).

import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it, test } from "vitest";
import { trustAuthority } from "../../src/common/transport/trust.ts";
import { makeAuthority, makeCertificate, opensslUnavailable } from "../helpers/certificates.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  cli,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

const dir = tempDir("steward-tls-");
const ca = join(dir, "ca.crt");
const cert = join(dir, "server.crt");
const key = join(dir, "server.key");

async function makeCertificates(): Promise<string | null> {
  const unavailable = await opensslUnavailable();
  if (unavailable) return unavailable;
  await makeAuthority(dir);
  await makeCertificate(dir, "server", { dns: ["localhost"], ip: ["127.0.0.1"] });
  return null;
}

const unavailable = await makeCertificates();
let server: (StewardProcess & { joinToken: string }) | undefined;
const agents: AgentProcess[] = [];

afterAll(async () => {
  for (const agent of agents) await agent.crash();
  await server?.stop();
  cleanup(dir, server?.data ?? "", ...agents.map((agent) => agent.work));
});

if (unavailable && process.env.CI) {
  test("openssl is available", () => {
    throw new Error(unavailable);
  });
} else if (unavailable) {
  test.skip(`TLS: ${unavailable}`, () => {});
} else {
  describe("TLS", () => {
    beforeAll(async () => {
      // This test process trusts the authority too, for its own requests.
      trustAuthority(ca);
      server = await startServerProcess({ args: ["--tls-cert", cert, "--tls-key", key] });
    });

    it("serves HTTPS: the CLI works with STEWARD_CA or --ca, and without names the certificate problem", async () => {
      const s = server!;
      expect(s.url.startsWith("https://")).toBe(true);
      const withEnv = await cli(s, ["ps", "--json"], { env: { STEWARD_CA: ca } });
      expect(withEnv.code, withEnv.stderr).toBe(0);
      const withFlag = await cli(s, ["--ca", ca, "hosts", "--json"]);
      expect(withFlag.code, withFlag.stderr).toBe(0);
      const without = await cli(s, ["ps"]);
      expect(without.code).not.toBe(0);
      expect(without.stderr).toMatch(
        /certificate this client does not trust \(UNABLE_TO_VERIFY_LEAF_SIGNATURE: /,
      );
      expect(without.stderr).toContain("--ca FILE or STEWARD_CA");
      const missing = await cli(s, ["--ca", join(dir, "nowhere.pem"), "ps"]);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toMatch(/--ca .*nowhere\.pem: ENOENT/);
    });

    it("plain HTTP to the TLS port fails with a message that says to use https", async () => {
      const s = server!;
      const plain = await cli({ url: s.url.replace("https:", "http:"), token: s.token }, ["ps"]);
      expect(plain.code).not.toBe(0);
      expect(plain.stderr).toContain(`speaks HTTPS, not plain HTTP: use ${s.url}`);
    });

    it("an agent with --ca joins over WSS and runs a job; without it, it says why it cannot connect", async () => {
      const s = server!;
      const refused = await startAgentProcess({
        name: "untrusting",
        servers: [s.url],
        joinToken: s.joinToken,
      });
      agents.push(refused);
      await waitFor(
        "the agent without the authority to report the certificate problem",
        async () =>
          /UNABLE_TO_VERIFY_LEAF_SIGNATURE|unable to verify the first certificate/.test(refused.output()),
        15_000,
        200,
      );
      agents.push(
        await startAgentProcess({
          name: "trusting",
          servers: [s.url],
          joinToken: s.joinToken,
          args: ["--ca", ca],
        }),
      );
      await waitFor(
        "the trusting agent to join",
        async () =>
          ((await api(s, "GET", "/api/v1/hosts")) as { name: string }[]).some((h) => h.name === "trusting"),
        15_000,
        200,
      );
      const { id } = await api(s, "POST", "/api/v1/jobs", {
        command: "echo over tls > out",
        outputs: ["out"],
      });
      const job = await waitForJobEnd(s, id, 30_000);
      expect(job.state).toBe("succeeded");
      expect(job.tasks[0].attempts[0].host).toBe("trusting");
      const hosts = (await api(s, "GET", "/api/v1/hosts")) as { name: string }[];
      expect(hosts.map((h) => h.name)).not.toContain("untrusting");
    });
  });
}

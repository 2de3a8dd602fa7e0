// An agent with GPUs where attempts are not kept from the GPUs not given to them (cgroup v2 has no
// devices controller; or no cgroups at all) says so as a warning in its log, tells the server
// (host.facts.gpusIsolated false), and `steward hosts` notes the host. The GPUs are named ids (no
// real GPU is needed: they are counted and given all the same). `--no-enforce` makes an agent
// without cgroups anywhere; an agent with its cgroups is isolated where a v1 devices controller is
// mounted, and not on cgroup v2 alone.

import { existsSync } from "node:fs";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Host } from "../../src/common/api/hosts.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  cli,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  waitFor,
} from "../helpers/steward.ts";

let server: StewardProcess & { joinToken: string };
let gpuHost: AgentProcess;
let plainHost: AgentProcess;
let cgroupHost: AgentProcess;

/** Whether this machine has a v1 devices controller (else cgroup v2 alone, or none). */
const devicesV1 = existsSync("/sys/fs/cgroup/devices/devices.allow");

beforeAll(async () => {
  server = await startServerProcess();
  gpuHost = await startAgentProcess({
    name: "gpu-open",
    servers: [server.url],
    joinToken: server.joinToken,
    args: ["--gpus", "0,1", "--no-enforce"],
  });
  cgroupHost = await startAgentProcess({
    name: "gpu-cgroups",
    servers: [server.url],
    joinToken: server.joinToken,
    args: ["--gpus", "0"],
  });
  plainHost = await startAgentProcess({
    name: "no-gpus",
    servers: [server.url],
    joinToken: server.joinToken,
  });
  await waitFor("both agents", async () => (await api(server, "GET", "/api/v1/hosts")).length === 3);
}, 60_000);

afterAll(async () => {
  await gpuHost?.stop();
  await plainHost?.stop();
  await cgroupHost?.stop();
  await server?.stop();
  cleanup(server?.data ?? "");
});

it("a GPU host without a devices cgroup warns, reports gpusIsolated false, and steward hosts notes it", async () => {
  const warning = await waitFor("the warning", () =>
    gpuHost
      .output()
      .split("\n")
      .find((line) => line.includes("attempts are not kept from the GPUs not given to them")),
  );
  // A warning (pino level 40, or WARN in text), not an info line.
  expect(warning).toMatch(/"level":40|WARN/);
  expect(plainHost.output()).not.toContain("not kept from the GPUs");
  const hosts = (await api(server, "GET", "/api/v1/hosts")) as Host[];
  const byName = Object.fromEntries(hosts.map((host) => [host.name, host]));
  expect(byName["gpu-open"].facts.gpusIsolated).toBe(false);
  expect(byName["no-gpus"].facts.gpusIsolated).toBeUndefined();
  // With its cgroups: isolated on a v1 devices controller, not on cgroup v2 alone (said as above).
  const isolated = byName["gpu-cgroups"].facts.enforces === true && devicesV1;
  expect(byName["gpu-cgroups"].facts.gpusIsolated).toBe(isolated);
  expect(cgroupHost.output().includes("not kept from the GPUs")).toBe(!isolated);
  console.log(
    `gpu-cgroups: enforces ${byName["gpu-cgroups"].facts.enforces}, v1 devices controller ${devicesV1}, gpusIsolated ${isolated}`,
  );
  const listed = await cli(server, ["hosts"]);
  expect(listed.code, listed.stderr).toBe(0);
  expect(listed.stdout).toContain(
    "note: GPUs not isolated on gpu-open: a job there can open GPUs not given to it",
  );
  expect(listed.stdout).not.toMatch(/not isolated on [^:]*no-gpus/);
  expect(/not isolated on [^:]*gpu-cgroups/.test(listed.stdout)).toBe(!isolated);
});

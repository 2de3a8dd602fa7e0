// Slurm pilots are told the broker's advertised URL: a broker listening on 0.0.0.0 with
// --advertise-url on the test network starts a pilot whose agent runs with that --server (not
// 127.0.0.1) and joins through it. The one-node Slurm cluster runs in the root namespace, so the
// broker does too, and advertises the root namespace's address on the test network (10.213.X.1).
// Skips without Slurm (fails under CI), as the other Slurm tests.

import { readdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { SlurmDriver } from "../../src/broker/drivers/slurm.ts";
import { openTestNetwork, type TestNetwork } from "../helpers/netns.ts";
import { ownPilots, slurmTests, slurmUnavailable } from "../helpers/slurm.ts";
import {
  api,
  cleanup,
  freePort,
  type StewardProcess,
  startServerProcess,
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

const unavailable = await slurmUnavailable();
const pool = `adv${process.pid}`;
const driver = new SlurmDriver();
let network: TestNetwork | null = null;
let server: (StewardProcess & { joinToken: string }) | null = null;
const dirs: string[] = [];

afterEach(async () => {
  await server?.stop();
  if (server) {
    const owner = ownPilots(server.joinToken, pool);
    for (const pilot of await driver.list(owner).catch(() => [])) await driver.cancel(pilot.id, owner);
  }
  await network?.destroy();
  cleanup(...dirs.splice(0));
  server = null;
  network = null;
});

/** The command lines (argument lists) of this pool's pilot agents now running. */
function pilotCommandLines(): string[][] {
  const found: string[][] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const args = readFileSync(`/proc/${entry}/cmdline`, "utf8").split("\0");
      const at = args.indexOf("--pool");
      if (args.includes("agent") && at >= 0 && args[at + 1] === pool) found.push(args);
    } catch {}
  }
  return found;
}

slurmTests("Slurm pilots and --advertise-url", unavailable, () => {
  it("a pilot's agent gets the advertised URL as --server and joins through it", async (context) => {
    const net = openTestNetwork(context);
    network = net;
    const data = tempDir("steward-adv-pilots-");
    dirs.push(data);
    const poolsFile = join(data, "pools.yaml");
    writeFileSync(
      poolsFile,
      [
        "pools:",
        `  - name: ${pool}`,
        "    driver: slurm",
        "    partition: debug",
        "    maxPilots: 1",
        "    backlog: 1",
        "    slotsPerPilot: 1",
        "    walltime: 300",
        "    idleSeconds: 30",
        "    allowBrokerAccount: true",
      ].join("\n"),
    );
    const port = await freePort();
    const advertised = `http://${net.rootAddress}:${port}`;
    server = await startServerProcess({
      data,
      port,
      args: ["--host", "0.0.0.0", "--advertise-url", advertised, "--pools", poolsFile],
    });
    const s = server;
    const { id } = (await api(s, "POST", "/api/v1/jobs", { command: "true" })) as { id: string };
    const job = await waitForJobEnd(s, id, 50_000);
    expect(job.state).toBe("succeeded");
    expect(job.tasks[0].attempts[0].host.startsWith(`${pool}-`)).toBe(true);
    // The pilot's agent (idle, still there) was given the advertised URL.
    const lines = await waitFor("the pilot's agent process", () => {
      const found = pilotCommandLines();
      return found.length > 0 ? found : null;
    });
    for (const args of lines) {
      expect(args[args.indexOf("--server") + 1]).toBe(advertised);
      expect(args.join(" ")).not.toContain("127.0.0.1");
    }
  }, 60_000);
});

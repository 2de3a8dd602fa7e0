// A pool's shared folders (the pools file's `shared`) count as shared at submit before any pilot
// has joined: a real server with a pool whose pilots would share /lustre (no batch system here: its
// pilots are never started), and a hand-driven host sharing only /data. A job with a workdir under
// /lustre is admitted, waits for the pool's pilots (explain's pool line says they could run it),
// and is not sent to the host; one under a folder no host nor pool shares is refused naming
// workdir and listing both folders.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { WebSocket } from "ws";
import { rawHello } from "../helpers/raw-agent.ts";
import {
  cleanup,
  cli,
  getJob,
  type StewardProcess,
  startServerProcess,
  tempDir,
} from "../helpers/steward.ts";

let server: StewardProcess & { joinToken: string };
let host: WebSocket | undefined;
const dir = tempDir("steward-pool-shared-");

beforeAll(async () => {
  const pools = join(dir, "pools.yaml");
  writeFileSync(
    pools,
    "pools:\n  - {name: lustre, driver: slurm, allowBrokerAccount: true, shared: [/lustre/]}\n",
  );
  // The hand-driven host sends no heartbeat: it must not be lost while the test looks.
  server = await startServerProcess({ hostTimeoutSeconds: 120, args: ["--pools", pools] });
  ({ ws: host } = await rawHello(server.url, {
    name: "nfs",
    token: server.joinToken,
    facts: { shared: ["/data"] },
  }));
});

afterAll(async () => {
  host?.close();
  await server?.stop();
  cleanup(server?.data ?? "", dir);
});

async function post(body: unknown): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`${server.url}/api/v1/jobs`, {
    method: "POST",
    headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

it("admits a workdir in a folder a pool's pilots will share, and refuses one nobody shares", async () => {
  const admitted = await post({ command: "./cfd", workdir: "/lustre/run1" });
  expect(admitted.status).toBe(201);
  const id = admitted.body.id as string;
  await new Promise((resolve) => setTimeout(resolve, 1000));
  expect((await getJob(server, id)).state).toBe("pending");
  const explained = await cli(server, ["explain", id]);
  expect(explained.stdout).toContain(
    "workdir /lustre/run1 is in no folder this host shares (it shares only /data)",
  );
  expect(explained.stdout).not.toContain("is in no folder a host shares");
  // The pool's pilots could run it (they share /lustre): not "its pilots cannot run the job".
  expect(explained.stdout).toMatch(/\n {2}lustre: /);
  expect(explained.stdout).not.toContain("its pilots cannot run the job");

  const refused = await post({ command: "./cfd", workdir: "/scratch/run1" });
  expect(refused.status).toBe(400);
  expect(refused.body).toMatchObject({
    error: {
      field: "workdir",
      message:
        "workdir: /scratch/run1 is in no folder the hosts share (they share /data, /lustre): a job runs in place only in a shared folder",
    },
  });
});

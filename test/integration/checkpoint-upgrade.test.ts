// A checkpoint from a store of an earlier version, which kept its manifests as blobs only (no part
// records): the data folder is made so by hand from one of today's (the part records removed, the
// manifest written where that version wrote it), and the server started on it again finds the
// checkpoint: the counter restarts on another host from where it was, not from the beginning,
// and the earlier version's blobs no record names go once newer generations are committed.

import { createHash } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { mkdir } from "node:fs/promises";
import { dirname, join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, expect, it } from "vitest";
import { parse } from "yaml";
import {
  type AgentProcess,
  api,
  cleanup,
  getJob,
  ROOT,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

const COUNTER = parse(readFileSync(join(ROOT, "examples/counter/job.yaml"), "utf8"));

let server: (StewardProcess & { joinToken: string }) | undefined;
const agents: AgentProcess[] = [];

afterAll(async () => {
  for (const agent of agents) await agent.crash();
  await server?.stop();
  cleanup(server?.data ?? "", ...agents.map((agent) => agent.work));
});

async function logOf(s: StewardProcess, id: string, attempt: number): Promise<string> {
  const response = await fetch(`${s.url}/api/v1/jobs/${id}/logs?task=0&attempt=${attempt}`, {
    headers: { authorization: `Bearer ${s.token}` },
  });
  return response.text();
}

it("restarts from a checkpoint whose manifest an earlier version kept as a blob only", async () => {
  server = await startServerProcess({ heartbeatSeconds: 1, hostTimeoutSeconds: 3 });
  const first = await startAgentProcess({
    name: "u1",
    slots: 1,
    servers: [server.url],
    joinToken: server.joinToken,
  });
  agents.push(first);
  const { id } = await api(server, "POST", "/api/v1/jobs", COUNTER);
  const s = server;
  const generation = await waitFor(
    "step 12 with a checkpoint",
    async () => {
      const steps = [...(await logOf(s, id, 1)).matchAll(/^step (\d+)$/gm)];
      const step = steps.length ? Number(steps[steps.length - 1][1]) : 0;
      const checkpoint = (await getJob(s, id)).tasks[0].checkpoint;
      return step >= 12 && checkpoint && checkpoint.generation >= 2 ? checkpoint.generation : null;
    },
    40_000,
    100,
  );
  await server.stop();
  await first.crash();

  // The data folder as an earlier version left it: the manifest a blob, no part recorded.
  const db = new DatabaseSync(join(server.data, "steward.db"));
  const stored = JSON.parse(
    (
      db.prepare("SELECT checkpoint FROM tasks WHERE job_id = ? AND idx = 0").get(id) as {
        checkpoint: string;
      }
    ).checkpoint,
  ) as { generation: number };
  expect(stored.generation).toBeGreaterThanOrEqual(generation);
  const part = db
    .prepare("SELECT files FROM checkpoint_parts WHERE job_id = ? AND task_index = 0 AND generation = ?")
    .get(id, stored.generation) as { files: string };
  db.prepare("DELETE FROM checkpoint_parts WHERE job_id = ?").run(id);
  db.close();
  const manifest = join(
    server.data,
    "blobs",
    "jobs",
    id,
    "tasks",
    "0",
    "checkpoint",
    "manifests",
    `${stored.generation}.json`,
  );
  await mkdir(dirname(manifest), { recursive: true });
  writeFileSync(manifest, JSON.stringify({ files: JSON.parse(part.files) }));
  // And an object of a checkpoint that version never committed: no manifest names it.
  const orphan = join(
    dirname(manifest),
    "..",
    "objects",
    createHash("sha256").update("orphan").digest("hex"),
  );
  writeFileSync(orphan, "orphan");

  server = await startServerProcess({
    data: server.data,
    port: server.port,
    heartbeatSeconds: 1,
    hostTimeoutSeconds: 3,
  });
  agents.push(
    await startAgentProcess({ name: "u2", slots: 1, servers: [server.url], joinToken: server.joinToken }),
  );
  const again = server;
  const line = await waitFor(
    "attempt 2's start line",
    async () => (await logOf(again, id, 2)).split("\n")[0] || null,
    30_000,
    100,
  );
  const match = /^start at (\d+) restarted=1 attempt=2 host=u2$/.exec(line);
  expect(match, line).not.toBeNull();
  expect(Number(match![1])).toBeGreaterThan(0);
  const job = await waitForJobEnd(server, id, 60_000);
  expect(job.state).toBe("succeeded");
  expect(job.tasks[0].checkpoint!.generation).toBeGreaterThan(stored.generation);
  // The newer generations replaced it: the earlier version's manifest went with its part, and the
  // object no manifest named went with the next commit.
  expect(existsSync(manifest)).toBe(false);
  expect(existsSync(orphan)).toBe(false);
}, 120_000);

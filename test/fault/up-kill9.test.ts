// Guarantee 1: accepted means durable. kill -9 of `steward up` in the middle of a stream of
// submissions loses none of the acknowledged jobs, and after a restart they all succeed.

import { afterAll, expect, it } from "vitest";
import { api, cleanup, type StewardProcess, startUp, waitFor } from "../helpers/steward.ts";

let steward: StewardProcess | null = null;
let data = "";

afterAll(async () => {
  await steward?.stop();
  if (data) cleanup(data);
});

it("loses no acknowledged job when steward up is killed -9 mid-stream", async () => {
  steward = await startUp({ agents: 2, slots: 2 });
  data = steward.data;
  const first = steward;
  const acknowledged: string[] = [];
  let refused = 0;
  // Eight clients submit as fast as they can; the kill lands while requests are in flight.
  const clients = Array.from({ length: 8 }, async (_, client) => {
    for (let i = 0; ; i++) {
      try {
        const job = await api(first, "POST", "/api/v1/jobs", {
          name: `stream-${client}-${i}`,
          command: ["sh", "-c", "sleep 0.2"],
          ...(i % 5 === 0 ? { array: { count: 3 } } : {}),
        });
        acknowledged.push(job.id);
      } catch {
        refused++;
        return;
      }
    }
  });
  await waitFor("some acknowledged jobs", () => acknowledged.length >= 150, 30_000, 10);
  await first.kill9();
  await Promise.all(clients);
  expect(refused).toBe(8);

  steward = await startUp({ data, port: first.port, agents: 2, slots: 2 });
  const restarted = steward;
  const jobs = (await api(restarted, "GET", "/api/v1/jobs?all=1")) as { id: string; state: string }[];
  const known = new Set(jobs.map((job) => job.id));
  const lost = acknowledged.filter((id) => !known.has(id));
  expect(lost).toEqual([]);
  await waitFor(
    "every acknowledged job succeeded",
    async () => {
      const all = (await api(restarted, "GET", "/api/v1/jobs?all=1")) as { id: string; state: string }[];
      const states = new Map(all.map((job) => [job.id, job.state]));
      const failed = acknowledged.filter((id) => ["failed", "cancelled"].includes(states.get(id) ?? ""));
      if (failed.length) throw new Error(`jobs ended badly: ${failed.join(", ")}`);
      return acknowledged.every((id) => states.get(id) === "succeeded");
    },
    120_000,
    500,
  );
  console.log(
    `acknowledged ${acknowledged.length} jobs before kill -9; all present and succeeded after restart`,
  );
}, 180_000);

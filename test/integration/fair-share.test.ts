// Fair share with real processes: two owners submit 20 one-cpu tasks each, one after the other,
// onto 4 slots; while both have work pending, neither holds all 4 slots for longer than one task's
// run (with plain FIFO the first owner would hold them until its 20 tasks were nearly done).

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanup, type StewardProcess, startUp, waitFor } from "../helpers/steward.ts";

const TASK_SECONDS = 1.5;
const TASKS = 20;

let steward: StewardProcess;

beforeAll(async () => {
  steward = await startUp({ agents: 1, slots: 4 });
});

afterAll(async () => {
  await steward?.stop();
  cleanup(steward?.data);
});

async function request(method: string, path: string, owner: string, body?: unknown) {
  const response = await fetch(steward.url + path, {
    method,
    headers: {
      authorization: `Bearer ${steward.token}`,
      "x-steward-user": owner,
      ...(body === undefined ? {} : { "content-type": "application/json" }),
    },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`);
  return response.json() as Promise<{
    id: string;
    owner: string;
    state: string;
    counts: { pending: number; running: number; succeeded: number };
  }>;
}

describe("fair share between owners", () => {
  it("neither owner holds every slot for longer than one task's run while both have work pending", async () => {
    const spec = (name: string) => ({
      name,
      command: ["sleep", String(TASK_SECONDS)],
      array: { count: TASKS },
    });
    const alice = await request("POST", "/api/v1/jobs", "alice", spec("alice-work"));
    const bob = await request("POST", "/api/v1/jobs", "bob", spec("bob-work"));
    expect([alice.owner, bob.owner]).toStrictEqual(["alice", "bob"]);

    /** Longest time one owner ran on all 4 slots while the other had tasks pending. */
    const longestMs: Record<string, number> = { alice: 0, bob: 0 };
    const since: Record<string, number | null> = { alice: null, bob: null };
    let samples = 0;
    await waitFor(
      "both owners' work to finish",
      async () => {
        const [a, b] = await Promise.all([
          request("GET", `/api/v1/jobs/${alice.id}?tasks=0&events=0`, "alice"),
          request("GET", `/api/v1/jobs/${bob.id}?tasks=0&events=0`, "bob"),
        ]);
        const now = Date.now();
        samples++;
        for (const [owner, mine, other] of [
          ["alice", a, b],
          ["bob", b, a],
        ] as const) {
          const hogging = mine.counts.running > 3 && other.counts.pending > 0;
          if (hogging) {
            since[owner] ??= now;
            longestMs[owner] = Math.max(longestMs[owner], now - since[owner]);
          } else since[owner] = null;
        }
        return a.state === "succeeded" && b.state === "succeeded";
      },
      120_000,
      50,
    );
    console.log(
      `fair share: longest stretch on all 4 slots, alice ${longestMs.alice} ms, bob ${longestMs.bob} ms (${samples} samples)`,
    );
    // One task's run, plus the time to report its end and start the next (sampling every 50 ms).
    const allowedMs = TASK_SECONDS * 1000 + 1000;
    expect(longestMs.alice).toBeLessThanOrEqual(allowedMs);
    expect(longestMs.bob).toBeLessThanOrEqual(allowedMs);
  });
});

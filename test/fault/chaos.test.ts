// Chaos: 200 tasks of 1-3 s on 4 agents while a loop crashes and restarts random agents and the
// server for 60 s. Afterwards every task succeeded with exactly one committed result.

import { setTimeout as sleep } from "node:timers/promises";
import { afterAll, expect, it } from "vitest";
import {
  type AgentProcess,
  api,
  cleanup,
  type JobJson,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  waitFor,
} from "../helpers/steward.ts";

const CHAOS_SECONDS = Number(process.env.STEWARD_CHAOS_SECONDS ?? 60);
const TASKS = 200;

let server: (StewardProcess & { joinToken: string }) | null = null;
const agents = new Map<string, AgentProcess>();
const works: string[] = [];

afterAll(async () => {
  for (const agent of agents.values()) await agent.crash();
  await server?.stop();
  cleanup(...works, server?.data ?? "");
});

/** Small seeded generator, so that a failing run can be replayed with STEWARD_CHAOS_SEED. */
function seeded(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

it("every task succeeds with exactly one committed result through 60 s of crashes", async () => {
  const seed = Number(process.env.STEWARD_CHAOS_SEED ?? Date.now() % 100000);
  console.log(`chaos seed ${seed} (replay with STEWARD_CHAOS_SEED=${seed})`);
  const random = seeded(seed);
  server = await startServerProcess({ heartbeatSeconds: 1, hostTimeoutSeconds: 3 });
  const { data, port, joinToken } = server;
  const startAgent = async (name: string, work?: string) => {
    const agent = await startAgentProcess({ name, work, slots: 4, servers: [server!.url], joinToken });
    if (!work) works.push(agent.work);
    agents.set(name, agent);
  };
  for (const name of ["c1", "c2", "c3", "c4"]) await startAgent(name);
  await waitFor("4 hosts", async () => (await api(server!, "GET", "/api/v1/hosts")).length === 4);
  const { id } = await api(server, "POST", "/api/v1/jobs", {
    command: "sleep $((1 + STEWARD_TASK_INDEX % 3)); echo $STEWARD_ATTEMPT > out",
    outputs: ["out"],
    array: { count: TASKS },
  });

  const actions = { hostCrashes: 0, agentKills: 0, serverKills: 0 };
  const until = Date.now() + CHAOS_SECONDS * 1000;
  while (Date.now() < until) {
    await sleep(1500 + random() * 2500);
    const roll = random();
    if (roll < 0.2) {
      actions.serverKills++;
      await server.kill9();
      await sleep(500 + random() * 1500);
      server = await startServerProcess({ data, port, heartbeatSeconds: 1, hostTimeoutSeconds: 3 });
    } else {
      const name = `c${1 + Math.floor(random() * 4)}`;
      const agent = agents.get(name)!;
      if (roll < 0.6) {
        actions.hostCrashes++;
        await agent.crash();
      } else {
        actions.agentKills++;
        await agent.kill9();
      }
      await sleep(random() * 2000);
      await startAgent(name, agent.work);
    }
  }

  const running = server;
  const job = await waitFor(
    "the array to end",
    async () => {
      const current = (await api(running, "GET", `/api/v1/jobs/${id}`)) as JobJson;
      return ["succeeded", "failed", "cancelled"].includes(current.state) ? current : null;
    },
    180_000,
    500,
  );
  if (job.state !== "succeeded") {
    const bad = job.tasks.filter((task) => task.state !== "succeeded");
    console.log(JSON.stringify({ seed, actions, bad, events: job.events.slice(-40) }, null, 1));
  }
  expect(job.state).toBe("succeeded");
  const outputs = (await api(running, "GET", `/api/v1/jobs/${id}/outputs`)) as {
    task: number;
    attempt: number;
  }[];
  expect(outputs).toHaveLength(TASKS);
  let lost = 0;
  let restarted = 0;
  for (const task of job.tasks) {
    const winners = task.attempts.filter((attempt) => attempt.outcome === "succeeded");
    expect(winners, `task ${task.index}`).toHaveLength(1);
    expect(outputs.filter((output) => output.task === task.index)).toEqual([
      expect.objectContaining({ attempt: winners[0].number }),
    ]);
    lost += task.attempts.filter((attempt) => attempt.outcome === "lost").length;
    if (task.attempts.length > 1) restarted++;
  }
  // Spot-check committed contents: the file is the winning attempt's own.
  for (const index of [0, 57, 123, 199]) {
    const response = await fetch(`${running.url}/api/v1/jobs/${id}/outputs/${index}/out`, {
      headers: { authorization: `Bearer ${running.token}` },
    });
    const winner = job.tasks[index].attempts.find((attempt) => attempt.outcome === "succeeded")!;
    expect((await response.text()).trim()).toBe(String(winner.number));
  }
  console.log(
    `chaos seed ${seed}: ${actions.serverKills} server kills, ${actions.hostCrashes} host crashes, ` +
      `${actions.agentKills} agent kills; ${lost} attempts lost, ${restarted} tasks restarted; all ${TASKS} succeeded once`,
  );
}, 360_000);

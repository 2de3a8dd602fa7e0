// Guarantee 3: a lost host's tasks restart elsewhere. Three agents, six 8-second tasks; one host
// crashes (the agent and everything below it, kill -9); heartbeat 1 s, host timeout 3 s.

import { afterAll, expect, it } from "vitest";
import {
  type AgentProcess,
  api,
  cleanup,
  getJob,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

let server: (StewardProcess & { joinToken: string }) | null = null;
const agents: AgentProcess[] = [];

afterAll(async () => {
  for (const agent of agents) await agent.crash();
  await server?.stop();
  cleanup(...agents.map((agent) => agent.work), server?.data ?? "");
});

it("restarts a crashed host's tasks on other hosts within 6 s", async () => {
  server = await startServerProcess({ heartbeatSeconds: 1, hostTimeoutSeconds: 3 });
  const running = server;
  for (const name of ["h1", "h2", "h3"]) {
    agents.push(
      await startAgentProcess({ name, slots: 4, servers: [running.url], joinToken: running.joinToken }),
    );
  }
  await waitFor("3 hosts", async () => (await api(running, "GET", "/api/v1/hosts")).length === 3);
  const { id } = await api(running, "POST", "/api/v1/jobs", {
    command: "sleep 8; echo $STEWARD_HOST > where",
    outputs: ["where"],
    array: { count: 6 },
  });
  const started = await waitFor("6 running attempts", async () => {
    const job = await getJob(running, id);
    return job.tasks.every((task) => task.attempts[0]?.state === "running") ? job : null;
  });
  const victimName = started.tasks[0].attempts[0].host;
  const victim = agents.find((agent) => agent.name === victimName)!;
  const victimTasks = started.tasks
    .filter((task) => task.attempts[0].host === victimName)
    .map((task) => task.index);
  expect(victimTasks.length).toBeGreaterThan(0);

  await victim.crash();
  const crashedAt = Date.now();
  await waitFor(
    "the crashed host's tasks running elsewhere",
    async () => {
      const job = await getJob(running, id);
      return victimTasks.every((index) => {
        const latest = job.tasks[index].attempts.at(-1)!;
        return latest.number === 2 && latest.host !== victimName && latest.state === "running";
      });
    },
    15_000,
    50,
  );
  const restartSeconds = (Date.now() - crashedAt) / 1000;
  console.log(`tasks of ${victimName} running elsewhere ${restartSeconds.toFixed(2)} s after the crash`);
  expect(restartSeconds).toBeLessThan(6);

  const job = await waitForJobEnd(running, id, 60_000);
  expect(job.state).toBe("succeeded");
  for (const index of victimTasks) {
    const first = job.tasks[index].attempts[0];
    expect(first).toMatchObject({ host: victimName, state: "ended", outcome: "lost" });
    expect(job.tasks[index].attempts[1].outcome).toBe("succeeded");
  }
  // These tasks keep no checkpoint: they started over, and their events say so.
  expect(
    job.events.filter((event) => event.message.includes("restarts from the beginning: no checkpoint")),
  ).toHaveLength(victimTasks.length);
  const hosts = (await api(running, "GET", "/api/v1/hosts")) as { name: string; state: string }[];
  expect(hosts.find((host) => host.name === victimName)?.state).toBe("lost");
}, 90_000);

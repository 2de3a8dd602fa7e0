// Guarantee 2: running work survives the broker and the agent. kill -9 of the server while tasks
// run, or of an agent process alone: after a restart every task succeeds with exactly one attempt.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { readProcStat } from "../../src/agent/attempt/job-process.ts";
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

let servers: StewardProcess[] = [];
let agents: AgentProcess[] = [];

afterEach(async () => {
  for (const agent of agents) await agent.crash();
  for (const server of servers) await server.stop();
  cleanup(...agents.map((agent) => agent.work), ...servers.map((server) => server.data));
  servers = [];
  agents = [];
});

async function allRunning(server: StewardProcess, id: string) {
  return waitFor("all attempts running", async () => {
    const job = await getJob(server, id);
    return job.tasks.every((task) => task.attempts[0]?.state === "running") ? job : null;
  });
}

it("kill -9 of the server while tasks run: after a restart each task succeeds with one attempt", async () => {
  const first = await startServerProcess({ heartbeatSeconds: 1, hostTimeoutSeconds: 3 });
  servers.push(first);
  for (const name of ["a1", "a2"]) {
    agents.push(
      await startAgentProcess({ name, slots: 2, servers: [first.url], joinToken: first.joinToken }),
    );
  }
  await waitFor("2 hosts", async () => (await api(first, "GET", "/api/v1/hosts")).length === 2);
  const { id } = await api(first, "POST", "/api/v1/jobs", {
    command: "sleep 4; echo $STEWARD_ATTEMPT > out",
    outputs: ["out"],
    array: { count: 4 },
  });
  await allRunning(first, id);
  await first.kill9();
  // The broker stays down for longer than a heartbeat; the agents keep running and buffering.
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const second = await startServerProcess({
    data: first.data,
    port: first.port,
    heartbeatSeconds: 1,
    hostTimeoutSeconds: 3,
  });
  servers.push(second);
  const job = await waitForJobEnd(second, id, 60_000);
  expect(job.state).toBe("succeeded");
  for (const task of job.tasks) {
    expect(task.attempts).toHaveLength(1);
    expect(task.attempts[0]).toMatchObject({ number: 1, outcome: "succeeded" });
  }
}, 90_000);

it("kill -9 of an agent alone, restarted with the same name and work folder: its tasks succeed with one attempt", async () => {
  // The agent is away 1.5 s plus its own start (a second or more on a loaded machine): the host
  // timeout leaves room for both, so that the return comes within it, as the test means.
  const server = await startServerProcess({ heartbeatSeconds: 1, hostTimeoutSeconds: 6 });
  servers.push(server);
  const agent = await startAgentProcess({
    name: "solo",
    slots: 3,
    servers: [server.url],
    joinToken: server.joinToken,
  });
  agents.push(agent);
  await waitFor("host", async () => (await api(server, "GET", "/api/v1/hosts")).length === 1);
  const { id } = await api(server, "POST", "/api/v1/jobs", {
    // Task 0 ends while the agent is away; the others go on past its return.
    command:
      'if [ "$STEWARD_TASK_INDEX" = 0 ]; then sleep 1; else sleep 4; fi; echo "out $STEWARD_TASK_INDEX"; echo $STEWARD_ATTEMPT > out',
    outputs: ["out"],
    array: { count: 3 },
  });
  await allRunning(server, id);
  await agent.kill9();
  await new Promise((resolve) => setTimeout(resolve, 1500));
  const again = await startAgentProcess({
    name: "solo",
    work: agent.work,
    slots: 3,
    servers: [server.url],
    joinToken: server.joinToken,
  });
  agents.push(again);
  const job = await waitForJobEnd(server, id, 60_000);
  expect(job.state).toBe("succeeded");
  for (const task of job.tasks) {
    expect(task.attempts).toHaveLength(1);
    expect(task.attempts[0]).toMatchObject({ number: 1, host: "solo", outcome: "succeeded" });
  }
  const logs = await fetch(`${server.url}/api/v1/jobs/${id}/logs?task=0`, {
    headers: { authorization: `Bearer ${server.token}` },
  });
  expect(await logs.text()).toBe("out 0\n");
}, 90_000);

it("cancel reaches an attempt whose agent was away when it was asked", async () => {
  const server = await startServerProcess({ heartbeatSeconds: 1, hostTimeoutSeconds: 5 });
  servers.push(server);
  const agent = await startAgentProcess({
    name: "away",
    slots: 1,
    servers: [server.url],
    joinToken: server.joinToken,
  });
  agents.push(agent);
  const { id } = await api(server, "POST", "/api/v1/jobs", { command: "sleep 60" });
  const job = await allRunning(server, id);
  expect(job.tasks[0].attempts[0].host).toBe("away");
  // The job's process, told by its pid and start time (a pid may be reused): it must end, not just
  // be reported so.
  const pidFile = join(agent.work, "attempts", `${id}.0.1`, "pid");
  const [pidLine, startTicks] = await waitFor("the job's pid and start time", () => {
    const lines = readFileSync(pidFile, "utf8").split("\n").filter(Boolean);
    return lines.length === 2 ? lines : null;
  });
  const pid = Number(pidLine);
  expect(readProcStat(pid)?.startTicks).toBe(startTicks);
  await agent.kill9();
  await api(server, "POST", `/api/v1/jobs/${id}/cancel`, {});
  const again = await startAgentProcess({
    name: "away",
    work: agent.work,
    slots: 1,
    servers: [server.url],
    joinToken: server.joinToken,
  });
  agents.push(again);
  const ended = await waitForJobEnd(server, id, 20_000);
  expect(ended.state).toBe("cancelled");
  expect(ended.tasks[0].attempts).toHaveLength(1);
  expect(ended.tasks[0].attempts[0].outcome).toBe("cancelled");
  const left = readProcStat(pid);
  expect(left === null || left.startTicks !== startTicks || left.state === "Z").toBe(true);
}, 60_000);

it("an agent with a wrong join token is refused and exits 3", async () => {
  const server = await startServerProcess();
  servers.push(server);
  const agent = await startAgentProcess({ name: "intruder", servers: [server.url], joinToken: "wrong" });
  agents.push(agent);
  const code = await new Promise<number | null>((resolve) =>
    agent.child.once("exit", (exitCode) => resolve(exitCode)),
  );
  expect(code).toBe(3);
  expect(agent.output()).toContain("refused");
  expect(await api(server, "GET", "/api/v1/hosts")).toEqual([]);
}, 30_000);

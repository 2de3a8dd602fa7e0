// Replicas with real processes: a job with `replicas: 2` starts on the only host there is, `slow`,
// where it would take 40 s; when `fast` joins, the idle slot takes a replica that finishes in 2 s.
// The job succeeds through it, well before 40 s; its one result holds `fast`, and the slow attempt
// is stopped, ending `cancelled` with reason `replica lost the race`.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
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

const SLOW_SECONDS = 40;

let server: StewardProcess & { joinToken: string };
const agents: AgentProcess[] = [];

beforeAll(async () => {
  server = await startServerProcess();
});

afterAll(async () => {
  for (const agent of agents) await agent.stop();
  await server?.stop();
  cleanup(server?.data, ...agents.map((agent) => agent.work));
});

async function agent(name: string, speed: number): Promise<AgentProcess> {
  const started = await startAgentProcess({
    name,
    slots: 1,
    servers: [server.url],
    joinToken: server.joinToken,
    args: ["--speed", String(speed)],
  });
  agents.push(started);
  await waitFor(`${name} to attach`, async () => {
    const hosts = (await api(server, "GET", "/api/v1/hosts")) as { name: string; connected: boolean }[];
    return hosts.some((host) => host.name === name && host.connected);
  });
  return started;
}

describe("replicas", () => {
  it("a task placed on a slow host finishes through its replica on a fast one; the loser is cancelled", async () => {
    await agent("slow", 0.2);
    const submitted = (await api(server, "POST", "/api/v1/jobs", {
      name: "race",
      command: `if [ "$STEWARD_HOST" = slow ]; then sleep ${SLOW_SECONDS}; else sleep 2; fi; echo $STEWARD_HOST > out`,
      outputs: ["out"],
      replicas: 2,
    })) as { id: string };
    const id = submitted.id;
    await waitFor("the first attempt to run on slow", async () => {
      const attempt = (await getJob(server, id)).tasks[0].attempts[0];
      return attempt?.host === "slow" && attempt.state === "running";
    });

    const joined = Date.now();
    await agent("fast", 4);
    const job = await waitForJobEnd(server, id, SLOW_SECONDS * 1000);
    const seconds = (Date.now() - joined) / 1000;
    console.log(`replicas: the job ended ${seconds.toFixed(1)} s after fast joined`);
    expect(job.state).toBe("succeeded");
    // The replica's 2 s, plus the agent's start and a few round trips; the slow attempt needs 40.
    expect(seconds).toBeLessThan(SLOW_SECONDS / 2);
    expect(job.counts).toMatchObject({ pending: 0, running: 0, succeeded: 1 });

    // The loser was stopped: it ends cancelled, long before its 40 s.
    const ended = await waitFor("the slow attempt to end", async () => {
      const latest = await getJob(server, id);
      return latest.tasks[0].attempts.every((attempt) => attempt.state === "ended") ? latest : null;
    });
    const attempts = ended.tasks[0].attempts;
    expect(attempts.map((attempt) => [attempt.number, attempt.host, attempt.outcome])).toEqual([
      [1, "slow", "cancelled"],
      [2, "fast", "succeeded"],
    ]);
    expect(attempts[0].reason).toBe("replica lost the race");
    const slowRan = (Date.parse(attempts[0].endedAt!) - Date.parse(attempts[0].startedAt)) / 1000;
    expect(slowRan).toBeLessThan(SLOW_SECONDS);
    expect(ended.tasks[0].state).toBe("succeeded");
    expect(ended.events.map((event) => event.message)).toContain(
      "replica 2 of task 0 placed on fast (attempt 2)",
    );

    // Exactly one result: the winner's.
    const outputs = await api(server, "GET", `/api/v1/jobs/${id}/outputs`);
    expect(outputs).toEqual([{ task: 0, attempt: 2, path: "out", bytes: 5 }]);
    const response = await fetch(`${server.url}/api/v1/jobs/${id}/outputs/0/out`, {
      headers: { authorization: `Bearer ${server.token}` },
    });
    expect(await response.text()).toBe("fast\n");
  });
});

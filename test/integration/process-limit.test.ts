// A job's process limit holds, with real cgroups on this host: a job with `resources.maxProcesses:
// 20` that forks 50 sleeps sees its forks fail beyond the limit (fewer than 20 start), while the
// agent goes on and takes the next job. Needs root and the pids controller (v1 or v2): without
// enforcement the test is skipped saying why, and fails under CI.

import { afterAll, beforeAll, expect, it } from "vitest";
import { enforcementUnavailable, skipUnlessEnforced } from "../helpers/agent-cgroups.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

const unavailable = enforcementUnavailable();
let server: (StewardProcess & { joinToken: string }) | undefined;
let agent: AgentProcess | undefined;

beforeAll(async () => {
  if (unavailable) return;
  server = await startServerProcess();
  agent = await startAgentProcess({
    name: "forker",
    slots: 2,
    servers: [server.url],
    joinToken: server.joinToken,
  });
  await waitFor("the agent connected", async () => (await api(server!, "GET", "/api/v1/hosts")).length === 1);
});

afterAll(async () => {
  await agent?.crash();
  await server?.stop();
  cleanup(server?.data ?? "", agent?.work ?? "");
});

/**
 * Starts `count` sleeps, counting those whose fork succeeded, then prints the count. Python, not a
 * shell: bash gives up on the whole script when a fork fails.
 */
function forks(count: number): string[] {
  const program = [
    "import subprocess",
    "started, children = 0, []",
    `for _ in range(${count}):`,
    "    try:",
    '        children.append(subprocess.Popen(["sleep", "2"]))',
    "        started += 1",
    "    except OSError:",
    "        pass",
    'print(f"started={started}", flush=True)',
    "for child in children:",
    "    child.wait()",
  ].join("\n");
  return ["python3", "-c", program];
}

async function logOf(s: StewardProcess, id: string): Promise<string> {
  return fetch(`${s.url}/api/v1/jobs/${id}/logs?task=0&attempt=1`, {
    headers: { authorization: `Bearer ${s.token}` },
  }).then((response) => response.text());
}

it("a job with maxProcesses 20 that forks 50 sleeps sees its forks fail; the agent goes on", async (context) => {
  skipUnlessEnforced(context, unavailable);
  const s = server!;
  const { id } = await api(s, "POST", "/api/v1/jobs", {
    command: forks(50),
    resources: { maxProcesses: 20 },
  });
  const ended = await waitForJobEnd(s, id, 30_000);
  expect(ended.state).toBe("succeeded");
  const started = Number(/started=(\d+)/.exec(await logOf(s, id))?.[1] ?? -1);
  expect(started).toBeGreaterThan(0);
  expect(started).toBeLessThan(20);

  // Without the field the default (4096) holds: all 50 start. The agent took the job: it went on.
  const { id: free } = await api(s, "POST", "/api/v1/jobs", { command: forks(50) });
  expect((await waitForJobEnd(s, free, 30_000)).state).toBe("succeeded");
  expect(await logOf(s, free)).toContain("started=50");
  expect(agent!.child.exitCode).toBeNull();
  const hosts = (await api(s, "GET", "/api/v1/hosts")) as { connected: boolean }[];
  expect(hosts[0].connected).toBe(true);
});

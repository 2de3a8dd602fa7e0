// A batch system ending a pilot (scancel) signals the job and the pilot's agent at once, and the
// agent may hear the job's end before its own SIGTERM. Here the job gets its SIGTERM a moment
// before the agent (a real `steward agent --ends-at`, as a pilot runs): its attempt still ends
// `migrated`, uncharged, not `failed`.

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { LEAVING_REASON } from "../../src/agent/agent.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  getJob,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
} from "../helpers/steward.ts";

let server: (StewardProcess & { joinToken: string }) | null = null;
let agent: AgentProcess | null = null;
let shared = "";

afterEach(async () => {
  await agent?.crash();
  await server?.stop();
  cleanup(agent?.work ?? "", server?.data ?? "", shared);
});

it("a pilot's job signalled just before the pilot itself ends migrated, not failed", async () => {
  shared = tempDir("steward-pilot-");
  server = await startServerProcess({});
  const s = server;
  const endsAt = Math.floor(Date.now() / 1000) + 3600;
  agent = await startAgentProcess({
    name: "pilot-1",
    slots: 1,
    servers: [s.url],
    joinToken: s.joinToken,
    args: ["--ends-at", String(endsAt)],
  });
  await waitFor("the pilot attached", async () => (await api(s, "GET", "/api/v1/hosts")).length === 1);
  const { id } = await api(s, "POST", "/api/v1/jobs", {
    command: `echo $$ > ${shared}/pid; trap 'exit 143' TERM; sleep 30 & wait`,
  });
  const pid = await waitFor("the job's pid", () => {
    try {
      return Number(readFileSync(join(shared, "pid"), "utf8")) || null;
    } catch {
      return null;
    }
  });
  // The batch system's SIGTERM: the job first, the agent 200 ms later.
  process.kill(pid, "SIGTERM");
  await new Promise((resolve) => setTimeout(resolve, 200));
  agent.child.kill("SIGTERM");
  const attempt = await waitFor("the attempt's end", async () => {
    const first = (await getJob(s, id)).tasks[0].attempts[0];
    return first?.state === "ended" ? first : null;
  });
  expect(attempt.outcome).toBe("migrated");
  expect(attempt.reason).toBe(LEAVING_REASON);
});

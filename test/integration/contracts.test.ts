// Performance contracts and self-migration with real processes: a server and two agents, za (label
// zone=a) and zb (zone=b), heartbeats every second. Jobs are shell counters that checkpoint their
// count and write their progress, so a moved job resumes where it was.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
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

let server: StewardProcess & { joinToken: string };
const agents: AgentProcess[] = [];

beforeAll(async () => {
  server = await startServerProcess({ heartbeatSeconds: 1, hostTimeoutSeconds: 3 });
  for (const [name, zone] of [
    ["za", "a"],
    ["zb", "b"],
  ]) {
    agents.push(
      await startAgentProcess({
        name,
        slots: 2,
        servers: [server.url],
        joinToken: server.joinToken,
        args: ["--label", `zone=${zone}`],
      }),
    );
  }
  await waitFor("2 hosts", async () => (await api(server, "GET", "/api/v1/hosts")).length === 2);
}, 60_000);

afterAll(async () => {
  for (const agent of agents) await agent.crash();
  await server?.stop();
  cleanup(...agents.map((agent) => agent.work), server?.data);
});

/**
 * A counter of `steps` steps kept in the checkpoint folder (written atomically), its progress in
 * $STEWARD_PROGRESS_FILE; `pause` is the shell expression of one step's sleep; `each` runs after
 * every step with $i set.
 */
function counter(steps: number, pause: string, each = ""): string {
  return `
state="$STEWARD_CHECKPOINT_DIR/count"
i=$(cat "$state" 2>/dev/null || echo 0)
echo "start at $i attempt=$STEWARD_ATTEMPT host=$STEWARD_HOST"
while [ "$i" -lt ${steps} ]; do
  sleep ${pause}
  i=$((i + 1))
  echo "$i" > "$state.tmp" && mv "$state.tmp" "$state"
  echo "$i" | awk '{ print $1 / ${steps} }' > "$STEWARD_PROGRESS_FILE"
  ${each}
  echo "step $i"
done
echo "$i" > result
`;
}

interface EventJson {
  kind: string;
  message: string;
  data: Record<string, unknown>;
}

interface Job {
  id: string;
  state: string;
  tasks: { attempts: { number: number; host: string; outcome: string | null; reason: string | null }[] }[];
  events: EventJson[];
}

async function logOf(id: string, attempt: number): Promise<string> {
  const response = await fetch(`${server.url}/api/v1/jobs/${id}/logs?task=0&attempt=${attempt}`, {
    headers: { authorization: `Bearer ${server.token}` },
  });
  return response.text();
}

async function result(id: string): Promise<string> {
  const response = await fetch(`${server.url}/api/v1/jobs/${id}/outputs/0/result`, {
    headers: { authorization: `Bearer ${server.token}` },
  });
  return (await response.text()).trim();
}

/** The count an attempt started from, from the first line of its log. */
function startedFrom(log: string): number {
  const match = /^start at (\d+) attempt=\d+ host=\S+$/m.exec(log);
  expect(match, log).not.toBeNull();
  return Number(match![1]);
}

describe("performance contract", () => {
  it("a job whose progress stalls on one host migrates after its grace and finishes elsewhere", async () => {
    // 40 steps, each 2.5 % of the job: on za a step takes over 1 s (under 1.5 per minute), on zb
    // 0.05 s and a few process starts (well over 10 per minute). The contract asks for 3 per
    // minute: za breaks it by half, zb keeps it even on a loaded machine. Rank puts the job on za.
    const submitted = (await api(server, "POST", "/api/v1/jobs", {
      name: "slow-on-za",
      command: counter(40, '$([ "$STEWARD_HOST" = za ] && echo 1 || echo 0.05)'),
      outputs: ["result"],
      rank: 'host.labels.zone == "a" ? 1.0 : 0.0',
      checkpoint: { intervalSeconds: 1, graceSeconds: 5 },
      contract: { minProgressPerMinute: 3, graceSeconds: 3 },
    })) as Job;
    const job = (await waitForJobEnd(server, submitted.id, 90_000)) as unknown as Job;
    expect(job.state).toBe("succeeded");
    const attempts = job.tasks[0].attempts;
    expect(attempts.map((attempt) => [attempt.host, attempt.outcome])).toEqual([
      ["za", "migrated"],
      ["zb", "succeeded"],
    ]);
    expect(attempts[0].reason).toMatch(
      /^contract: progress \d+\.\d{3}\/min below 3\.000\/min for \d+ s on za$/,
    );
    const broken = job.events.find((event) => event.kind === "contract.broken");
    expect(broken?.data).toMatchObject({ host: "za", attempt: 1, minProgressPerMinute: 3, graceSeconds: 3 });
    expect(broken?.data.ratePerMinute as number).toBeLessThan(3);
    expect(broken?.data.belowSeconds as number).toBeGreaterThanOrEqual(3);
    // Resumed from its checkpoint on zb, not from the beginning.
    expect(startedFrom(await logOf(job.id, 2))).toBeGreaterThan(0);
    expect(await result(job.id)).toBe("40");
    console.log(
      `first attempt: ${attempts[0].reason}; resumed at step ${startedFrom(await logOf(job.id, 2))}`,
    );
  }, 120_000);
});

describe("self-migration", () => {
  it('a job that writes host.labels.zone == "b" into its requirements file moves to the zone-b host', async () => {
    const submitted = (await api(server, "POST", "/api/v1/jobs", {
      name: "wants-zone-b",
      command: counter(
        30,
        "0.2",
        `[ "$i" -ge 5 ] && echo 'host.labels.zone == "b"' > "$STEWARD_REQUIREMENTS_FILE"`,
      ),
      outputs: ["result"],
      requirements: 'host.labels.zone == "a"',
      checkpoint: { intervalSeconds: 1, graceSeconds: 5 },
    })) as Job;
    const job = (await waitForJobEnd(server, submitted.id, 90_000)) as unknown as Job;
    expect(job.state).toBe("succeeded");
    const attempts = job.tasks[0].attempts;
    expect(attempts.map((attempt) => [attempt.host, attempt.outcome, attempt.reason])).toEqual([
      ["za", "migrated", 'requirements changed: host.labels.zone == "b"'],
      ["zb", "succeeded", null],
    ]);
    expect(job.events.filter((event) => event.kind === "requirements.changed")).toHaveLength(1);
    expect(startedFrom(await logOf(job.id, 2))).toBeGreaterThanOrEqual(5);
    expect(await result(job.id)).toBe("30");
  }, 120_000);

  it("an invalid expression is reported in the job's events once and ignored", async () => {
    const submitted = (await api(server, "POST", "/api/v1/jobs", {
      name: "bad-requirements",
      command: counter(
        20,
        "0.2",
        `[ "$i" -ge 3 ] && echo 'host.labels.zone ==' > "$STEWARD_REQUIREMENTS_FILE"`,
      ),
      outputs: ["result"],
      requirements: 'host.labels.zone == "a"',
    })) as Job;
    const job = (await waitForJobEnd(server, submitted.id, 60_000)) as unknown as Job;
    expect(job.state).toBe("succeeded");
    expect(job.tasks[0].attempts.map((attempt) => [attempt.host, attempt.outcome])).toEqual([
      ["za", "succeeded"],
    ]);
    // Written at step 3 of 20 (0.2 s each): a few heartbeats carried it, one event says so.
    const refused = job.events.filter((event) => event.kind === "requirements.refused");
    expect(refused).toHaveLength(1);
    expect(refused[0].message).toMatch(/^requirements file: /);
    expect(refused[0].data).toMatchObject({ host: "za", requirements: "host.labels.zone ==" });
    expect(job.events.some((event) => event.kind === "requirements.changed")).toBe(false);
  }, 90_000);
});

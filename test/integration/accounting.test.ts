// Usage accounting with real agents and real cgroups: each attempt's CPU time, peak memory and
// wall time, measured by its agent, in `steward acct --format csv` (also after `steward rm` of
// the job), `steward show` and the API; a user sees only their own; a job with `cpus: 1` that
// runs four busy processes uses about one CPU-second a second; an agent without enforcement
// reports the wall time and the CPU time its supervisor's shell counted, no peak memory. Needs
// root and cgroups for the enforced figures: without them those tests are skipped saying why (and
// fail under CI).

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CSV_HEADERS } from "../../src/cli/usage-format.ts";
import type { AccountingRow } from "../../src/common/api/accounting.ts";
import { enforcementUnavailable, skipUnlessEnforced } from "../helpers/agent-cgroups.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  cli,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

const unavailable = enforcementUnavailable();
let server: StewardProcess & { joinToken: string };
const agents: AgentProcess[] = [];

beforeAll(async () => {
  server = await startServerProcess();
  agents.push(
    await startAgentProcess({
      name: "metered",
      slots: 4,
      servers: [server.url],
      joinToken: server.joinToken,
    }),
    await startAgentProcess({
      name: "unmetered",
      slots: 2,
      servers: [server.url],
      joinToken: server.joinToken,
      args: ["--no-enforce"],
    }),
  );
  await waitFor(
    "both agents connected",
    async () =>
      ((await api(server, "GET", "/api/v1/hosts")) as { connected: boolean }[]).filter((h) => h.connected)
        .length === 2,
  );
}, 60_000);

afterAll(async () => {
  for (const agent of agents) await agent.crash();
  await server?.stop();
  cleanup(server?.data ?? "", ...agents.map((agent) => agent.work));
});

type CsvRow = Record<(typeof CSV_HEADERS)[number], string>;

/** `steward acct --format csv` read back (no field here holds a comma or a quote). */
async function acctCsv(args: string[] = []): Promise<CsvRow[]> {
  const result = await cli(server, ["acct", "--format", "csv", ...args]);
  expect(result.code, result.stderr).toBe(0);
  const [header, ...lines] = result.stdout.split("\r\n").filter((line) => line !== "");
  expect(header).toBe(CSV_HEADERS.join(","));
  return lines.map((line) => {
    const fields = line.split(",");
    return Object.fromEntries(CSV_HEADERS.map((name, i) => [name, fields[i]])) as CsvRow;
  });
}

async function submit(body: object): Promise<string> {
  return ((await api(server, "POST", "/api/v1/jobs", body)) as { id: string }).id;
}

describe("measured by an enforcing agent", () => {
  it("a job with cpus: 1 running four busy processes for 5 s uses at most about 1.1 CPU-seconds a second", async (context) => {
    skipUnlessEnforced(context, unavailable, "usage cannot be measured here");
    const id = await submit({
      name: "four-busy",
      command: "for i in 1 2 3 4; do timeout 5 sh -c 'while :; do :; done' & done; wait",
      resources: { cpus: 1 },
      requirements: "host.enforces",
    });
    const job = await waitForJobEnd(server, id, 60_000);
    expect(job.state).toBe("succeeded");
    const usage = job.tasks[0].attempts[0].usage;
    expect(usage).not.toBeNull();
    const cpu = usage!.userSeconds! + usage!.systemSeconds!;
    expect(usage!.wallSeconds).toBeGreaterThanOrEqual(4.9);
    // Four processes would burn 20 CPU-seconds unlimited; the quota allows one CPU's worth.
    expect(cpu / usage!.wallSeconds).toBeLessThanOrEqual(1.1);
    // And it did burn (on a busy machine a share of the one CPU it may have).
    expect(cpu).toBeGreaterThan(1);
  }, 90_000);

  it("steward acct --format csv lists each attempt with CPU time, peak memory and wall time, also after steward rm", async (context) => {
    skipUnlessEnforced(context, unavailable, "usage cannot be measured here");
    const work = await submit({
      name: "work",
      command: "head -c 200000000 /dev/zero | gzip -1 > /dev/null; python3 -c 'x = bytearray(60 * 2**20)'",
      requirements: "host.enforces",
    });
    const failing = await submit({
      name: "failing",
      command: "sleep 0.5; exit 3",
      retry: { maxAttempts: 2, backoffSeconds: 0 },
      requirements: "host.enforces",
    });
    expect((await waitForJobEnd(server, work, 60_000)).state).toBe("succeeded");
    expect((await waitForJobEnd(server, failing, 60_000)).state).toBe("failed");

    const check = (rows: CsvRow[]) => {
      const ofWork = rows.filter((row) => row.job === work);
      expect(ofWork).toHaveLength(1);
      const [row] = ofWork;
      expect(row).toMatchObject({
        name: "work",
        task: "0",
        attempt: "1",
        host: "metered",
        outcome: "succeeded",
        exitCode: "0",
      });
      expect(Number(row.cpuSeconds)).toBeGreaterThan(0.2);
      expect(Number(row.cpuSeconds)).toBeCloseTo(Number(row.userSeconds) + Number(row.systemSeconds), 6);
      // The bytearray alone is 60 MB.
      expect(Number(row.peakMemoryMb)).toBeGreaterThan(60);
      expect(Number(row.wallSeconds)).toBeGreaterThan(0);
      const ofFailing = rows.filter((each) => each.job === failing);
      expect(ofFailing.map((each) => [each.attempt, each.outcome, each.exitCode])).toStrictEqual([
        ["1", "failed", "3"],
        ["2", "failed", "3"],
      ]);
      expect(row.signal).toBe("");
      for (const each of ofFailing) {
        expect(Number(each.wallSeconds)).toBeGreaterThanOrEqual(0.5);
        expect(each.cpuSeconds).toMatch(/^\d/);
        expect(Number(each.peakMemoryMb)).toBeGreaterThan(0);
      }
    };
    const before = await acctCsv();
    check(before);

    // steward show has a usage line per attempt.
    const shown = await cli(server, ["show", failing]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(
      /usage:\n {2}task 0 attempt 1: cpu \d+\.\d\d s \(user [\d.]+ s, system [\d.]+ s\), peak memory [\d.]+ MB, wall [\d.]+ s, exit 3\n {2}task 0 attempt 2: /,
    );

    const removed = await cli(server, ["rm", work, failing]);
    expect(removed.code, removed.stderr).toBe(0);
    await expect(api(server, "GET", `/api/v1/jobs/${work}`)).rejects.toMatchObject({ status: 404 });
    const after = await acctCsv();
    check(after);
    expect(after.filter((row) => row.job === work || row.job === failing)).toStrictEqual(
      before.filter((row) => row.job === work || row.job === failing),
    );
  }, 120_000);
});

describe("an agent without enforcement", () => {
  it("reports the wall time and the CPU time its supervisor's shell counted, and no peak memory", async () => {
    const id = await submit({
      name: "lax",
      command: "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; sleep 1",
      requirements: "!host.enforces",
    });
    const job = await waitForJobEnd(server, id, 60_000);
    expect(job.state).toBe("succeeded");
    const attempt = job.tasks![0].attempts[0];
    expect(attempt.host).toBe("unmetered");
    const usage = attempt.usage!;
    expect(usage.peakMemoryMb).toBeNull();
    expect(usage.signal).toBeNull();
    expect(usage.wallSeconds).toBeGreaterThanOrEqual(1);
    // The loop burns CPU; the sleep does not.
    expect(usage.userSeconds! + usage.systemSeconds!).toBeGreaterThan(0.05);
    expect(usage.userSeconds! + usage.systemSeconds!).toBeLessThan(usage.wallSeconds);
    const rows = (await api(server, "GET", "/api/v1/accounting")) as AccountingRow[];
    const row = rows.find((each) => each.job === id);
    expect(row?.usage).toStrictEqual(attempt.usage);
    const shown = await cli(server, ["show", id]);
    expect(shown.stdout).toMatch(
      /task 0 attempt 1: cpu \d+\.\d\d s \(user [\d.]+ s, system [\d.]+ s\), peak memory not measured, wall [\d.]+ s, exit 0/,
    );
  }, 60_000);
});

describe("who sees what", () => {
  it("a user sees only their own attempts, whatever --user says; the admin sees everyone's, or one user's", async () => {
    const token = await cli(server, ["token", "create", "--user", "ursula", "--role", "user"]);
    expect(token.code, token.stderr).toBe(0);
    const ursula = { url: server.url, token: token.stdout.trim() };
    const own = (
      (await api(ursula, "POST", "/api/v1/jobs", { name: "mine", command: "true" })) as { id: string }
    ).id;
    await waitForJobEnd(server, own, 30_000);
    const theirs = (await api(ursula, "GET", "/api/v1/accounting?user=admin")) as AccountingRow[];
    expect(theirs.map((row) => row.job)).toStrictEqual([own]);
    const asUser = await cli(ursula, ["acct", "--format", "json"]);
    expect((JSON.parse(asUser.stdout) as AccountingRow[]).map((row) => row.owner)).toStrictEqual(["ursula"]);
    const all = (await api(server, "GET", "/api/v1/accounting")) as AccountingRow[];
    expect(new Set(all.map((row) => row.owner)).size).toBeGreaterThan(1);
    const oneUser = (await api(server, "GET", "/api/v1/accounting?user=ursula")) as AccountingRow[];
    expect(oneUser.map((row) => row.job)).toStrictEqual([own]);
    const table = await cli(server, ["acct", "--user", "ursula"]);
    expect(table.stdout.split("\n")[0]).toMatch(/^JOB\s+TASK\s+ATTEMPT\s+NAME\s+OWNER/);
    expect(table.stdout).toContain("mine");
    const bad = await cli(server, ["acct", "--since", "yesterday"]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain("--since yesterday");
  }, 60_000);
});

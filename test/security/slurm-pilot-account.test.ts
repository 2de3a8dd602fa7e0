// Slurm pilots run as the pool's own account, not the broker's (issue 22, item 3): a broker run as
// root with its data folder 0700 and a pool with `account:` a separate local account. A job on a
// real pilot of the test cluster runs as that account and reads neither the admin token nor the
// database nor the join token; while it runs, no process's command line holds a token (the pool
// token reaches the agent in a 0600 file of the account's). Needs root and the Slurm test cluster.

import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import { poolJoinToken } from "../../src/broker/pools/pool-token.ts";
import {
  accountsUnavailable,
  createAccount,
  type LocalAccount,
  removeAccount,
} from "../helpers/local-accounts.ts";
import { reachableCheckout } from "../helpers/reachable-checkout.ts";
import { slurm, slurmTests, slurmUnavailable } from "../helpers/slurm.ts";
import {
  api,
  cleanup,
  type StewardProcess,
  startServerProcess,
  tempDir,
  waitFor,
} from "../helpers/steward.ts";

const unavailable = (await slurmUnavailable()) ?? accountsUnavailable();
const pool = `iso${process.pid}`;
const accountName = `stwpilot${process.pid}`;
let account: LocalAccount | undefined;
let server: (StewardProcess & { joinToken: string }) | undefined;
const data = tempDir("steward-pilot-account-");

let releaseCheckout = () => {};

afterAll(async () => {
  await server?.stop();
  if (account) {
    await slurm("scancel", [`--user=${account.name}`]).catch(() => undefined);
    await waitFor(
      "the account's pilots to leave",
      async () => (await slurm("squeue", ["-h", `--user=${accountName}`])).trim() === "",
      30_000,
      500,
    ).catch(() => undefined);
    removeAccount(account.name);
  }
  releaseCheckout();
  cleanup(data);
});

/** Every process's command line (NULs as spaces), with its uid. */
function commandLines(): { pid: number; uid: number; line: string }[] {
  const lines: { pid: number; uid: number; line: string }[] = [];
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const line = readFileSync(`/proc/${entry}/cmdline`, "utf8").replaceAll("\0", " ");
      lines.push({ pid: Number(entry), uid: statSync(`/proc/${entry}`).uid, line });
    } catch {
      // The process ended meanwhile.
    }
  }
  return lines;
}

slurmTests("pilot account isolation", unavailable, () => {
  it("a job on a pilot runs as the pool's account and cannot read the broker's data folder; no command line holds a token", async (context) => {
    account = createAccount(accountName);
    // The pilot's agent runs as the account from the broker's checkout, which it must be able to
    // reach: the broker runs from a bind mount of it where it lies under a folder only root may
    // pass (helpers/reachable-checkout.ts).
    const checkout = reachableCheckout(accountName);
    if ("unavailable" in checkout) {
      if (process.env.CI) throw new Error(checkout.unavailable);
      context.skip(checkout.unavailable);
      return;
    }
    releaseCheckout = checkout.release;
    expect(statSync(data).mode & 0o777).toBe(0o700);
    const poolsFile = join(data, "pools.yaml");
    writeFileSync(
      poolsFile,
      [
        "pools:",
        `  - name: ${pool}`,
        "    driver: slurm",
        "    partition: debug",
        "    maxPilots: 1",
        "    backlog: 1",
        "    walltime: 600",
        "    idleSeconds: 3",
        `    account: ${account.name}`,
      ].join("\n"),
    );
    server = await startServerProcess({ data, args: ["--pools", poolsFile], steward: checkout.steward });
    const s = server;
    const probe = [
      'echo "whoami=$(id -un)"',
      `if cat ${data}/admin-token; then echo ADMIN-TOKEN-READ; else echo ADMIN-TOKEN-DENIED; fi`,
      `if cat ${data}/join-token; then echo JOIN-TOKEN-READ; else echo JOIN-TOKEN-DENIED; fi`,
      `if head -c 16 ${data}/steward.db; then echo DB-READ; else echo DB-DENIED; fi`,
      `if ls ${data}; then echo DATA-LISTED; else echo DATA-DENIED; fi`,
      "echo probe-done",
      "sleep 6",
    ].join("; ");
    const submitted = (await api(s, "POST", "/api/v1/jobs", { command: ["sh", "-c", probe] })) as {
      id: string;
    };
    await waitFor(
      "the probe to run on a pilot",
      async () => {
        const job = (await api(s, "GET", `/api/v1/jobs/${submitted.id}`)) as {
          tasks: { attempts: { state: string; host: string }[] }[];
        };
        return job.tasks[0].attempts.some(
          (attempt) => attempt.state === "running" && attempt.host.startsWith(`${pool}-`),
        );
      },
      90_000,
      250,
    );

    // While the pilot runs: its agent is there under the account, and no command line holds a token.
    const lines = commandLines();
    const pilotAgent = lines.find((each) => each.uid === account!.uid && / agent /.test(each.line));
    expect(pilotAgent, "the pilot's agent runs as the pool's account").toBeDefined();
    const secrets = [s.joinToken, s.token, poolJoinToken(s.joinToken, pool)];
    const leaking = lines.filter((each) => secrets.some((secret) => each.line.includes(secret)));
    expect(leaking.map((each) => `${each.pid}: ${each.line}`)).toStrictEqual([]);
    expect(pilotAgent!.line).not.toMatch(/--token /);

    const ended = await waitFor(
      "the probe to end",
      async () => {
        const job = (await api(s, "GET", `/api/v1/jobs/${submitted.id}?tasks=0&events=0`)) as {
          state: string;
        };
        return ["succeeded", "failed"].includes(job.state) ? job : null;
      },
      60_000,
      250,
    );
    expect(ended.state).toBe("succeeded");
    const response = await fetch(`${s.url}/api/v1/jobs/${submitted.id}/logs?task=0`, {
      headers: { authorization: `Bearer ${s.token}` },
    });
    const log = await response.text();
    expect(log).toContain(`whoami=${account.name}`);
    expect(log).toContain("probe-done");
    for (const denied of ["ADMIN-TOKEN-DENIED", "JOIN-TOKEN-DENIED", "DB-DENIED", "DATA-DENIED"])
      expect(log).toContain(denied);
    expect(log).not.toContain(s.token);
    expect(log).not.toContain(s.joinToken);
    // The pool token is in a file of the account's that no one else may read.
    const tokenFiles = execFileSync("find", [account.home, "-name", "pool-token"], { encoding: "utf8" })
      .trim()
      .split("\n")
      .filter(Boolean);
    expect(tokenFiles.length).toBe(1);
    const tokenFile = statSync(tokenFiles[0]);
    expect(tokenFile.uid).toBe(account.uid);
    expect(tokenFile.mode & 0o777).toBe(0o600);
  }, 180_000);
});

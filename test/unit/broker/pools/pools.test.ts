// The pools file and the Slurm driver's pure parts: what sbatch is asked, how squeue reads.

import { chmodSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { batchEnv, parseSqueue, sbatchArgs, slurmTime } from "../../../../src/broker/drivers/slurm.ts";
import {
  type LocalAccount,
  PoolAccountError,
  poolPilotDir,
  resolvePoolAccounts,
} from "../../../../src/broker/pools/pilot-account.ts";
import { pilotCommand } from "../../../../src/broker/pools/pilot-command.ts";
import {
  pilotsToStart,
  poolRetrySeconds,
  queueWaitExceeded,
} from "../../../../src/broker/pools/pilot-demand.ts";
import { metaLedger, parseLedgerEntry } from "../../../../src/broker/pools/pilot-ledger.ts";
import { pilotJobName } from "../../../../src/broker/pools/pool-token.ts";
import { SqliteStore } from "../../../../src/broker/store/sqlite.ts";
import { PoolsFileError, parsePoolsFile } from "../../../../src/common/model/pools-file.ts";
import { Harness } from "../../../helpers/core-harness.ts";

describe("the pools file", () => {
  it("fills in the defaults", () => {
    expect(parsePoolsFile("pools:\n  - name: hpc\n    driver: slurm\n")).toStrictEqual([
      {
        name: "hpc",
        driver: "slurm",
        maxPilots: 4,
        backlog: 2,
        slotsPerPilot: 1,
        walltime: 3600,
        idleSeconds: 120,
        maxQueueWaitSeconds: 300,
        sbatchArgs: [],
        allowBrokerAccount: false,
        shared: [],
      },
    ]);
  });

  it("takes the folders its pilots share, each written once as the agent writes them", () => {
    const [pool] = parsePoolsFile(
      "pools:\n  - {name: hpc, driver: slurm, shared: [/data/, /scratch//x, /data, /]}\n",
    );
    expect(pool.shared).toStrictEqual(["/data", "/scratch/x", "/"]);
  });

  it("gives each pilot's agent the pool's shared folders as --shared, quoted", () => {
    const [pool] = parsePoolsFile('pools:\n  - {name: hpc, driver: slurm, shared: [/data, "/my data\'s"]}\n');
    const command = pilotCommand(pool, { steward: "/opt/steward", serverUrl: "http://b:4780", dir: "/p" });
    expect(command).toContain(` --shared '/data' --shared '/my data'"'"'s'`);
    const [plain] = parsePoolsFile("pools:\n  - {name: hpc, driver: slurm}\n");
    expect(pilotCommand(plain, { steward: "s", serverUrl: "u", dir: "/p" })).not.toContain("--shared");
  });

  it("takes the pilots' account, allowBrokerAccount and pilotDir", () => {
    const [pool] = parsePoolsFile(
      "pools:\n  - {name: hpc, driver: slurm, account: steward-pilot, allowBrokerAccount: true, pilotDir: /scratch/p}\n",
    );
    expect(pool).toMatchObject({
      account: "steward-pilot",
      allowBrokerAccount: true,
      pilotDir: "/scratch/p",
    });
  });

  it.each([
    ["not a mapping", "- 1", "", "a pools file must be a mapping"],
    ["no pools", "pools: []", "pools", "expected"],
    ["an unknown key", "pools:\n  - {name: a, driver: slurm, gpus: 2}", "pools[0].gpus", "unknown key"],
    ["an unknown driver", "pools:\n  - {name: a, driver: pbs}", "pools[0].driver", ""],
    [
      "a walltime under a minute",
      "pools:\n  - {name: a, driver: slurm, walltime: 30}",
      "pools[0].walltime",
      "",
    ],
    [
      "a backlog above maxPilots",
      "pools:\n  - {name: a, driver: slurm, maxPilots: 1, backlog: 2}",
      "pools[0].backlog",
      "must not exceed maxPilots",
    ],
    [
      "a name twice",
      "pools:\n  - {name: a, driver: slurm}\n  - {name: a, driver: slurm}",
      "pools[1].name",
      "named twice",
    ],
    ["the default pool's name", "pools:\n  - {name: default, driver: slurm}", "pools[0].name", "by hand"],
    ["a bad name", "pools:\n  - {name: Big Pool, driver: slurm}", "pools[0].name", "lower-case"],
    ["bad YAML", "pools: [", "", "not valid YAML"],
    [
      "an account like an option",
      "pools:\n  - {name: a, driver: slurm, account: -u}",
      "pools[0].account",
      "local account",
    ],
    [
      "an account with a space",
      "pools:\n  - {name: a, driver: slurm, account: a b}",
      "pools[0].account",
      "local account",
    ],
    [
      "allowBrokerAccount not a boolean",
      "pools:\n  - {name: a, driver: slurm, allowBrokerAccount: yes please}",
      "pools[0].allowBrokerAccount",
      "",
    ],
    [
      "a relative shared folder",
      "pools:\n  - {name: a, driver: slurm, shared: [/data, data]}",
      "pools[0].shared[1]",
      "must be an absolute path",
    ],
    [
      "a shared folder with ..",
      "pools:\n  - {name: a, driver: slurm, shared: [/data/../etc]}",
      "pools[0].shared[0]",
      "must not contain ..",
    ],
    [
      "a relative pilotDir",
      "pools:\n  - {name: a, driver: slurm, pilotDir: pilots}",
      "pools[0].pilotDir",
      "absolute",
    ],
  ])("refuses %s, naming the field", (_, text, field, message) => {
    let caught: unknown;
    try {
      parsePoolsFile(text);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(PoolsFileError);
    expect((caught as PoolsFileError).field).toBe(field);
    expect((caught as PoolsFileError).message).toContain(message);
  });
});

describe("the Slurm driver's commands", () => {
  it.each([
    [59, "0-00:01:00"],
    [60, "0-00:01:00"],
    [3600, "0-01:00:00"],
    [90_061, "1-01:02:00"],
  ])("asks for %i s as %s", (seconds, time) => {
    expect(slurmTime(seconds)).toBe(time);
  });

  it("names the pilot after its pool and asks for its cpus, time and partition", () => {
    expect(
      sbatchArgs({
        pool: "hpc",
        owner: { jobName: pilotJobName("join", "hpc"), account: "pilot", runAs: [] },
        cpus: 2,
        walltimeSeconds: 600,
        command: "steward agent",
        logDir: "/tmp/p",
        partition: "debug",
        extraArgs: ["--qos=low"],
      }),
    ).toStrictEqual([
      "--parsable",
      `--job-name=${pilotJobName("join", "hpc")}`,
      "--cpus-per-task=2",
      "--ntasks=1",
      "--time=0-00:10:00",
      "--chdir=/tmp/p",
      "--output=/tmp/p/pilot-%j.log",
      "--no-requeue",
      "--partition=debug",
      "--qos=low",
    ]);
  });

  it("names pilots after the broker's join token and the pool", () => {
    expect(pilotJobName("join", "hpc")).toMatch(/^steward-pilot-[0-9a-f]{12}-hpc$/);
    expect(pilotJobName("join", "hpc")).toBe(pilotJobName("join", "hpc"));
    expect(pilotJobName("other", "hpc")).not.toBe(pilotJobName("join", "hpc"));
    expect(pilotJobName("join", "hpc2")).not.toBe(pilotJobName("join", "hpc"));
  });

  it("passes Slurm's commands (and so the pilots) none of the broker's secrets", () => {
    const env = batchEnv({
      PATH: "/usr/bin",
      STEWARD_TOKEN: "admin",
      STEWARD_JOIN_TOKEN: "join",
      PGPASSWORD: "pw",
    });
    expect(env).toStrictEqual({ PATH: "/usr/bin" });
  });

  it("reads squeue: states mapped, reasons kept, ended jobs left out", () => {
    expect(
      parseSqueue("12|PENDING|PartitionDown\n13|RUNNING|None\n14|COMPLETING|None\n15|COMPLETED|None\n\n"),
    ).toStrictEqual([
      { id: "12", state: "pending", batchState: "PENDING", reason: "PartitionDown" },
      { id: "13", state: "running", batchState: "RUNNING", reason: "" },
      { id: "14", state: "ending", batchState: "COMPLETING", reason: "" },
    ]);
  });
});

describe("pilotsToStart", () => {
  const base = { maxPilots: 4, backlog: 2, slotsPerPilot: 2 };
  const pilots = (pending: number, running: number, ending = 0) => ({ pending, running, ending });
  it.each([
    ["no work for new pilots: none", 0, pilots(0, 0), 0],
    ["3 cpus of work: 2 pilots of 2 slots", 3, pilots(0, 0), 2],
    ["work for 4 pilots, backlog 2: 2 now", 8, pilots(0, 0), 2],
    ["one pending: the backlog leaves room for 1 more", 4, pilots(1, 0), 1],
    ["never beyond maxPilots", 100, pilots(0, 3), 1],
    ["backlog full: none", 100, pilots(2, 0), 0],
    ["ending pilots still count toward maxPilots", 100, pilots(0, 2, 2), 0],
  ])("%s", (_, cpusWanted, counts, expected) => {
    expect(pilotsToStart({ ...base, cpusWanted, pilots: counts })).toBe(expected);
  });

  it.each([
    ["pending 5 s, limit 10 s: waits", 5_000, 10, false],
    ["pending exactly the limit: waits", 10_000, 10, false],
    ["pending past the limit: cancelled", 10_001, 10, true],
  ])("queue wait: %s", (_, pendingFor, limit, expected) => {
    expect(queueWaitExceeded(1_000_000, 1_000_000 + pendingFor, limit)).toBe(expected);
  });

  it.each([
    [0, 0],
    [1, 5],
    [2, 10],
    [4, 40],
    [5, 60],
    [9, 60],
  ])("after %i failed submissions, waits %i s", (failures, seconds) => {
    expect(poolRetrySeconds(failures)).toBe(seconds);
  });
});

describe("the pilots' account", () => {
  const broker: LocalAccount = { name: "steward", uid: 990, home: "/var/lib/steward" };
  const accounts: Record<string, LocalAccount> = {
    pilot: { name: "pilot", uid: 1500, home: "/home/pilot" },
    steward: broker,
  };
  const lookup = (name: string) => accounts[name] ?? null;
  const pools = (text: string) => parsePoolsFile(`pools:\n${text}`);
  const resolve = (text: string, privateDirs: string[] = []) =>
    resolvePoolAccounts(pools(text), privateDirs, broker, lookup);

  it.each([
    ["without account", "  - {name: hpc, driver: slurm}"],
    ["with the broker's own account", "  - {name: hpc, driver: slurm, account: steward}"],
  ])("refuses a pool %s unless allowBrokerAccount", (_, text) => {
    expect(() => resolve(text)).toThrow(PoolAccountError);
    expect(() => resolve(text)).toThrow(/pool hpc: its pilots would run as the broker's own account steward/);
  });

  it("allowBrokerAccount: runs as the broker, with a warning naming the pool", () => {
    const { accounts: resolved, warnings } = resolve(
      "  - {name: hpc, driver: slurm, allowBrokerAccount: true}",
    );
    expect(resolved.get("hpc")).toMatchObject({ name: "steward", own: true, runAs: [] });
    expect(warnings).toStrictEqual([
      {
        pool: "hpc",
        message: expect.stringMatching(
          /^pool hpc: pilots run as the broker's own account steward .*data folder/,
        ),
      },
    ]);
  });

  it("another account: commands run as it (runuser as root, sudo -n otherwise), pilots in its home", () => {
    const { accounts: resolved, warnings } = resolve("  - {name: hpc, driver: slurm, account: pilot}");
    const account = resolved.get("hpc")!;
    expect(account).toMatchObject({ name: "pilot", own: false, runAs: ["sudo", "-n", "-u", "pilot", "--"] });
    expect(warnings).toStrictEqual([]);
    const asRoot = resolvePoolAccounts(
      pools("  - {name: hpc, driver: slurm, account: pilot}"),
      [],
      { ...broker, uid: 0 },
      lookup,
    );
    expect(asRoot.accounts.get("hpc")!.runAs).toStrictEqual(["runuser", "-u", "pilot", "--"]);
    expect(poolPilotDir(pools("  - {name: hpc, driver: slurm}")[0], account, "/data/pilots")).toBe(
      "/home/pilot/.steward-pilots/hpc",
    );
    expect(
      poolPilotDir(pools("  - {name: hpc, driver: slurm, pilotDir: /scratch/x}")[0], account, "/data/pilots"),
    ).toBe("/scratch/x");
  });

  it("refuses an account that does not exist", () => {
    expect(() => resolve("  - {name: hpc, driver: slurm, account: nobody-here}")).toThrow(
      /pool hpc: account nobody-here is no local account/,
    );
  });

  it("refuses another account while the data folder is open to other accounts", () => {
    const open = mkdtempSync(join(tmpdir(), "steward-open-"));
    try {
      chmodSync(open, 0o755);
      expect(() => resolve("  - {name: hpc, driver: slurm, account: pilot}", [open])).toThrow(
        /mode 0755.*chmod 700/,
      );
      chmodSync(open, 0o700);
      expect(() => resolve("  - {name: hpc, driver: slurm, account: pilot}", [open])).not.toThrow();
    } finally {
      rmSync(open, { recursive: true, force: true });
    }
  });
});

describe("the pilots this broker submitted", () => {
  it("are kept in the store: a restarted broker knows them, per pool", async () => {
    const dir = mkdtempSync(join(tmpdir(), "steward-ledger-"));
    const harness = new Harness(new SqliteStore(join(dir, "steward.db")));
    try {
      const ledger = metaLedger(await harness.start());
      expect([...ledger.ids("hpc")]).toStrictEqual([]);
      await ledger.record("hpc", ["13", "12"]);
      await ledger.record("gpu", ["40"]);
      const again = metaLedger(await harness.restart());
      expect([...again.ids("hpc")]).toStrictEqual(["12", "13"]);
      expect([...again.ids("gpu")]).toStrictEqual(["40"]);
      await again.record("hpc", ["13"]);
      expect([...metaLedger(await harness.restart()).ids("hpc")]).toStrictEqual(["13"]);
    } finally {
      await harness.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    [undefined, []],
    ['["12","13"]', ["12", "13"]],
    ["not json", []],
    ['{"12": true}', []],
    ['["12", 13]', ["12"]],
  ])("the entry %s holds %j", (entry, ids) => {
    expect([...parseLedgerEntry(entry)]).toStrictEqual(ids);
  });
});

// The pools file and the Slurm driver's pure parts: what sbatch is asked, how squeue reads.

import { describe, expect, it } from "vitest";
import { parseSqueue, pilotJobName, sbatchArgs, slurmTime } from "../../src/drivers/slurm.ts";
import { PoolsFileError, parsePoolsFile } from "../../src/model/pools-file.ts";
import { pilotsToStart, poolRetrySeconds, queueWaitExceeded } from "../../src/pools/pilot-demand.ts";

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
      },
    ]);
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
        cpus: 2,
        walltimeSeconds: 600,
        command: "steward agent",
        logDir: "/tmp/p",
        partition: "debug",
        extraArgs: ["--qos=low"],
      }),
    ).toStrictEqual([
      "--parsable",
      `--job-name=${pilotJobName("hpc")}`,
      "--cpus-per-task=2",
      "--ntasks=1",
      "--time=0-00:10:00",
      "--output=/tmp/p/pilot-%j.log",
      "--no-requeue",
      "--partition=debug",
      "--qos=low",
    ]);
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

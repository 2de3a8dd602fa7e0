// The feasibility stage: which hosts may run a job at all, before counting free room. Each rule in
// turn (the first reason wins), and the stage of a pass: the hosts that take work in it that no
// rule rules out, in the order given.

import { describe, expect, it } from "vitest";
import {
  FEASIBILITY_STAGES,
  feasibleHosts,
  infeasibility,
  movesItsData,
  runsItsContainer,
  sharesWorkdir,
  workFolderHasRoom,
} from "../../../../../src/broker/scheduler/stages/feasibility.ts";
import type { HostView } from "../../../../../src/broker/scheduler/view.ts";
import { hostView, jobView } from "../../../../helpers/scheduler-views.ts";

type JobFields = Parameters<typeof jobView>[1];

describe("feasibility rules, in turn", () => {
  it.each<[string, JobFields, Parameters<typeof hostView>[1], string | null]>([
    ["a ready, connected host that has what the job asks", {}, {}, null],
    ["a host that is not ready", {}, { state: "draining" }, "host is draining"],
    ["a host whose agent is away", {}, { connected: false }, "host agent is not connected"],
    ["readiness is asked first", {}, { state: "lost", connected: false }, "host is lost"],
    ["more cpus than its slots", { cpus: 5 }, {}, "job needs 5 cpus, host has 4 slots"],
    ["a busy host is feasible (fit counts its room)", { cpus: 4 }, { slotsFree: 0, memoryFreeMb: 0 }, null],
    [
      "more memory than it has",
      { memoryMb: 9000 },
      { facts: { memoryMb: 8192 } },
      "job needs 9000 MB, host has 8192 MB",
    ],
    ["exactly the memory it has", { memoryMb: 8192 }, { facts: { memoryMb: 8192 } }, null],
    ["a gpu it does not declare", { gpus: 1 }, {}, "job needs 1 gpu, host has 0"],
    ["gpus it declares", { gpus: 2 }, { facts: { gpus: ["0", "1"] } }, null],
    [
      "units of a resource it has too few of",
      { custom: { licence: 2 } },
      { facts: { resources: { licence: 1 } } },
      "job needs 2 licence, host has 1",
    ],
    [
      "a pilot past its walltime margin",
      {},
      { walltime: { secondsLeft: 30, marginSeconds: 60 } },
      "pilot walltime ends in 30 s (within the 60 s margin)",
    ],
    [
      "a task longer than the pilot has left, without a checkpoint",
      { expectedSeconds: 600 },
      { walltime: { secondsLeft: 400, marginSeconds: 60 } },
      "task needs about 600 s, pilot has 340 s before its walltime margin, and the job has no checkpoint to move with",
    ],
    [
      "the same task with a checkpoint to move with",
      { expectedSeconds: 600, checkpoints: true },
      { walltime: { secondsLeft: 400, marginSeconds: 60 } },
      null,
    ],
    ["requirements that hold", { requirements: 'host.os == "linux"' }, {}, null],
    [
      "requirements that do not",
      { requirements: 'host.arch == "aarch64"' },
      {},
      "requirements are false on this host",
    ],
    ["a workdir in a folder it shares", { workdir: "/data/run1" }, { facts: { shared: ["/data"] } }, null],
    [
      "a workdir in no folder it shares",
      { workdir: "/data/run1" },
      { facts: { shared: ["/scratch"] } },
      "workdir /data/run1 is in no folder this host shares (it shares only /scratch)",
    ],
    [
      "the workdir is asked before requirements",
      { workdir: "/data/run1", requirements: 'host.arch == "aarch64"' },
      {},
      "workdir /data/run1 is in no folder this host shares (it shares no folder)",
    ],
    [
      "size is asked before requirements",
      { cpus: 8, requirements: 'host.arch == "aarch64"' },
      {},
      "job needs 8 cpus, host has 4 slots",
    ],
  ])("%s", (_, job, host, reason) => {
    expect(infeasibility(jobView("j", job), hostView("h", host))).toBe(reason);
  });

  it("asks only the rules it is given", () => {
    const job = jobView("j", { cpus: 8 });
    expect(infeasibility(job, hostView("h"), [])).toBeNull();
    expect(infeasibility(job, hostView("h", { state: "lost" }), FEASIBILITY_STAGES.slice(1))).toBe(
      "job needs 8 cpus, host has 4 slots",
    );
  });
});

describe("sharesWorkdir: a job run in place goes only to a host sharing a folder that holds its workdir", () => {
  it.each<[string, string | undefined, string[] | undefined, string | null]>([
    ["a job without a workdir goes anywhere", undefined, undefined, null],
    ["a job without a workdir, on a host that shares", undefined, ["/data"], null],
    ["the folder itself", "/data", ["/data"], null],
    ["a folder inside it", "/data/cfd/run-12", ["/data"], null],
    ["inside the second folder it shares", "/scratch/run1", ["/data", "/scratch"], null],
    ["written with a trailing slash", "/data/run1/", ["/data"], null],
    ["a host sharing / shares every folder", "/anything", ["/"], null],
    [
      "a host of an earlier release (no fact)",
      "/data/run1",
      undefined,
      "workdir /data/run1 is in no folder this host shares (it shares no folder)",
    ],
    [
      "a host that shares none",
      "/data/run1",
      [],
      "workdir /data/run1 is in no folder this host shares (it shares no folder)",
    ],
    [
      "a folder beside it is not inside it",
      "/data2/run1",
      ["/data"],
      "workdir /data2/run1 is in no folder this host shares (it shares only /data)",
    ],
    [
      "a folder inside the workdir does not hold it",
      "/data",
      ["/data/run1", "/scratch"],
      "workdir /data is in no folder this host shares (it shares only /data/run1, /scratch)",
    ],
  ])("%s", (_, workdir, shared, reason) => {
    const job = jobView("j", workdir === undefined ? {} : { workdir });
    const host = hostView("h", shared === undefined ? {} : { facts: { shared } });
    expect(sharesWorkdir(job, host)).toBe(reason);
  });

  it("is one of the stages every pass and explain ask", () => {
    expect(FEASIBILITY_STAGES).toContain(sharesWorkdir);
  });
});

describe("movesItsData: a job with s3: inputs or outputs to push goes only to an agent that moves them", () => {
  it.each<[string, string[] | undefined, string[] | undefined, string | null]>([
    ["a job that needs nothing goes anywhere", undefined, undefined, null],
    ["a job that needs nothing, on an agent of an earlier release", [], undefined, null],
    [
      "an agent of an earlier release (no fact)",
      ["s3-inputs"],
      undefined,
      "host agent does not do s3-inputs (an earlier release)",
    ],
    ["an agent that does it", ["s3-inputs"], ["s3-inputs", "url-outputs"], null],
    ["an agent that does both", ["s3-inputs", "url-outputs"], ["url-outputs", "s3-inputs"], null],
    [
      "the first it lacks is named",
      ["s3-inputs", "url-outputs"],
      ["s3-inputs"],
      "host agent does not do url-outputs (an earlier release)",
    ],
    [
      "an agent that does none",
      ["url-outputs"],
      [],
      "host agent does not do url-outputs (an earlier release)",
    ],
    [
      "a job naming a secret, on an agent that signs s3: transfers with its own credentials only",
      ["s3-inputs", "s3-credentials"],
      ["url-inputs", "s3-inputs", "url-outputs"],
      "host agent does not do s3-credentials (an earlier release)",
    ],
    [
      "a job naming a secret, on an agent that takes it",
      ["s3-inputs", "s3-credentials"],
      ["url-inputs", "s3-inputs", "url-outputs", "s3-credentials"],
      null,
    ],
  ])("%s", (_, needed, offered, reason) => {
    const job = jobView("j", needed === undefined ? {} : { transfers: needed });
    const host = hostView("h", offered === undefined ? {} : { facts: { transfers: offered } });
    expect(movesItsData(job, host)).toBe(reason);
    expect(infeasibility(job, host)).toBe(reason);
  });

  it("is one of the stages every pass and explain ask", () => {
    expect(FEASIBILITY_STAGES).toContain(movesItsData);
  });
});

describe("workFolderHasRoom: a host whose agent's work folder is full takes no new work", () => {
  it("rules out a host whose agent says its folder is full, naming the space", () => {
    const cases: [string, Parameters<typeof hostView>[1], string | null][] = [
      ["a host with room", { facts: { diskFull: false, diskFreeMb: 300, diskMinFreeMb: 256 } }, null],
      ["an agent of an earlier release (no fact)", { facts: { diskFreeMb: 0 } }, null],
      [
        "a full folder",
        { facts: { diskFull: true, diskFreeMb: 12, diskMinFreeMb: 256 } },
        "host's work folder is full: 12 MB free, under the 256 MB its agent keeps free",
      ],
      [
        "a full folder, its threshold not said",
        { facts: { diskFull: true, diskFreeMb: 0 } },
        "host's work folder is full: 0 MB free, under the 0 MB its agent keeps free",
      ],
    ];
    for (const [what, host, reason] of cases)
      expect(workFolderHasRoom(jobView("j"), hostView("h", host)), what).toBe(reason);
  });

  it("is asked by every pass and explain, after readiness and the agent's connection, before size", () => {
    const full = { facts: { diskFull: true, diskFreeMb: 1, diskMinFreeMb: 2 } };
    const reason = "host's work folder is full: 1 MB free, under the 2 MB its agent keeps free";
    expect(infeasibility(jobView("j"), hostView("h", full))).toBe(reason);
    expect(infeasibility(jobView("j", { cpus: 8 }), hostView("h", full))).toBe(reason);
    expect(infeasibility(jobView("j"), hostView("h", { ...full, connected: false }))).toBe(
      "host agent is not connected",
    );
    expect(feasibleHosts(jobView("j"), [hostView("h", full), hostView("g")], { has: () => true })).toEqual([
      hostView("g"),
    ]);
  });
});

describe("feasibleHosts (the stage of a pass)", () => {
  const hosts: HostView[] = [
    hostView("a"),
    hostView("b", { facts: { arch: "aarch64" } }),
    hostView("c", { slots: 2 }),
    hostView("d", { connected: false }),
    hostView("e", { slotsFree: 0, facts: { shared: ["/data"] } }),
  ];
  it.each<[string, JobFields, string[], string[]]>([
    ["every host that takes work, in order", {}, ["a", "b", "c", "e"], ["a", "b", "c", "e"]],
    ["only those that take work in this pass", {}, ["e", "a"], ["a", "e"]],
    ["none of those taking no work, feasible or not", {}, ["d"], []],
    ["those the job's size rules out are not", { cpus: 4 }, ["a", "b", "c", "e"], ["a", "b", "e"]],
    [
      "those its requirements rule out are not",
      { requirements: 'host.arch == "x86_64"' },
      ["a", "b", "c", "e"],
      ["a", "c", "e"],
    ],
    ["only those sharing its workdir", { workdir: "/data/run1" }, ["a", "b", "c", "e"], ["e"]],
    ["none when no host takes work", {}, [], []],
  ])("%s", (_, job, open, expected) => {
    const feasible = feasibleHosts(jobView("j", job), hosts, new Set(open));
    expect(feasible.map((host) => host.name)).toStrictEqual(expected);
  });
});

describe("runsItsContainer: a job in a container goes only to a host with a runtime that shares its host paths", () => {
  const runc = { runtime: "runc", path: "/usr/sbin/runc", version: "1.1.5" };
  it.each<[string, string[] | undefined, Record<string, unknown>, string | null]>([
    ["a job without a container goes anywhere", undefined, {}, null],
    ["a host with runc, the image an input", [], { containers: runc }, null],
    [
      "a host whose agent found no runtime says why",
      [],
      { containersUnavailable: "/nonexistent does not run: spawnSync /nonexistent ENOENT" },
      "job runs in a container (oci-archive:i.tar), host has no container runtime: /nonexistent does not run: spawnSync /nonexistent ENOENT",
    ],
    [
      "an agent of an earlier release",
      [],
      {},
      "job runs in a container (oci-archive:i.tar), host has no container runtime: an agent of an earlier release",
    ],
    [
      "its host paths in shared folders",
      ["/data/i.tar", "/ref"],
      { containers: runc, shared: ["/data", "/ref"] },
      null,
    ],
    [
      "a host path in no shared folder",
      ["/data/i.tar", "/ref"],
      { containers: runc, shared: ["/data"] },
      "container path /ref is in no folder this host shares (it shares only /data)",
    ],
    [
      "a host path on a host that shares no folder",
      ["/ref"],
      { containers: runc },
      "container path /ref is in no folder this host shares (it shares no folder)",
    ],
    [
      "a host path in neither of two shared folders",
      ["/ref"],
      { containers: runc, shared: ["/data", "/scratch"] },
      "container path /ref is in no folder this host shares (it shares only /data, /scratch)",
    ],
  ])("%s", (_, hostPaths, facts, reason) => {
    const job = jobView(
      "j",
      hostPaths === undefined ? {} : { container: { image: "oci-archive:i.tar", hostPaths } },
    );
    const host = hostView("h", { facts });
    expect(runsItsContainer(job, host)).toBe(reason);
    expect(infeasibility(job, host)).toBe(reason);
  });

  it("is one of the stages every pass and explain ask", () => {
    expect(FEASIBILITY_STAGES).toContain(runsItsContainer);
  });
});

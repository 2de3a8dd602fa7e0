// GPUs and other countable resources, and memory grown after running out of memory: the agent's
// declaration, the scheduler's count, the server's device ids, the job's environment, the cgroup.

import { describe, expect, it } from "vitest";
import { countableEnvironment } from "../../../../src/agent/attempt/job-script.ts";
import { cgroupSettings } from "../../../../src/agent/cgroups/cgroup-limits.ts";
import { parseDeviceNames, parseGpuList, parseNvidiaSmiList } from "../../../../src/agent/host/gpus.ts";
import { explainHosts } from "../../../../src/broker/scheduler/explain.ts";
import { schedule } from "../../../../src/broker/scheduler/schedule.ts";
import { infeasibility } from "../../../../src/broker/scheduler/stages/feasibility.ts";
import { capacityShortfall, fitsCapacity, takeRoom } from "../../../../src/broker/scheduler/stages/fit.ts";
import { makesRoom } from "../../../../src/broker/scheduler/stages/preemption.ts";
import type { HostView, JobView, RunningTaskView } from "../../../../src/broker/scheduler/view.ts";
import { assignGpus, customFits } from "../../../../src/broker/state/device-assignment.ts";
import type { HostFacts } from "../../../../src/common/model/host-facts.ts";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import { grownMemoryMb } from "../../../../src/common/model/task-outcome.ts";
import { countableResources } from "../../../../src/daemons/options.ts";

const NVIDIA_SMI_L = `GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-6a1c0b0e-3f1d-2b9e-8f1a-0c2d4e6f8a10)
GPU 1: NVIDIA A100-SXM4-40GB (UUID: GPU-7b2d1c1f-4a2e-3c0f-9a2b-1d3e5f7a9b21)
GPU 3: NVIDIA A100-SXM4-40GB (UUID: GPU-8c3e2d2a-5b3f-4d1a-0b3c-2e4f6a8b0c32)
`;

describe("the GPUs an agent declares", () => {
  it.each([
    [NVIDIA_SMI_L, ["0", "1", "3"]],
    ["", []],
    ["No devices were found\n", []],
    [
      "GPU 0: Tesla T4 (UUID: GPU-x)\n  MIG 1g.5gb Device 0: (UUID: MIG-y)\nGPU 1: Tesla T4 (UUID: GPU-z)\n",
      ["0", "1"],
    ],
  ])("nvidia-smi -L %#", (text, ids) => {
    expect(parseNvidiaSmiList(text)).toEqual(ids);
  });

  it("reads /dev/nvidiaN, not nvidiactl or nvidia-uvm, in index order", () => {
    expect(parseDeviceNames(["nvidia10", "nvidiactl", "nvidia2", "nvidia-uvm", "null", "nvidia0"])).toEqual([
      "0",
      "2",
      "10",
    ]);
  });

  it.each([
    ["0,1,3", ["0", "1", "3"]],
    [" 2 , 0 ", ["2", "0"]],
    ["1,1,01", ["1"]],
  ])("--gpus %s", (value, ids) => {
    expect(parseGpuList(value)).toEqual(ids);
  });

  it.each(["a", "0,,1", "-1", "0;1"])("--gpus %s is refused", (value) => {
    expect(() => parseGpuList(value)).toThrow(/--gpus needs auto or device indexes/);
  });

  it("--resource name=N adds up, and refuses what is not a count", () => {
    expect(countableResources("fpga=2", countableResources("license=4"))).toEqual({ license: 4, fpga: 2 });
    expect(() => countableResources("license")).toThrow(/name=count/);
    expect(() => countableResources("license=-1")).toThrow(/name=count/);
  });
});

describe("a job's countable resources", () => {
  it("takes gpus and custom units, and memoryGrowth in retry", () => {
    const spec = validateJobSpec({
      command: "true",
      resources: { gpus: 2, custom: { license: 1 } },
      retry: { maxAttempts: 4, memoryGrowth: 2, maxMemoryMb: 1000 },
    });
    expect(spec.resources).toEqual({ cpus: 1, memoryMb: 0, gpus: 2, custom: { license: 1 } });
    expect(spec.retry).toMatchObject({ memoryGrowth: 2, maxMemoryMb: 1000 });
  });

  it.each([
    [{ resources: { gpus: -1 } }, "resources.gpus"],
    [{ resources: { custom: { "my-license": 1 } } }, "resources.custom.my-license"],
    [{ resources: { custom: { license: 0 } } }, "resources.custom.license"],
    [{ retry: { memoryGrowth: 1 } }, "retry.memoryGrowth"],
  ])("refuses %j", (fields, field) => {
    expect(() => validateJobSpec({ command: "true", ...fields })).toThrow(field);
  });
});

describe("fit with gpus and custom resources", () => {
  const room = { slotsFree: 4, memoryFreeMb: 1000, gpusFree: 1, customFree: { license: 1 } };
  it.each([
    [{ cpus: 1, memoryMb: 0 }, null],
    [{ cpus: 1, memoryMb: 0, gpus: 1 }, null],
    [{ cpus: 1, memoryMb: 0, gpus: 2 }, "needs 2 gpus, host has 1 free"],
    [{ cpus: 1, memoryMb: 0, custom: { license: 1 } }, null],
    [{ cpus: 1, memoryMb: 0, custom: { license: 2 } }, "needs 2 license, host has 1 free"],
    [{ cpus: 1, memoryMb: 0, custom: { fpga: 1 } }, "needs 1 fpga, host has 0 free"],
    [{ cpus: 5, memoryMb: 0, gpus: 2 }, "needs 5 free slots, 4 free"],
  ])("%j: %s", (need, shortfall) => {
    expect(capacityShortfall(need, room)).toBe(shortfall);
    expect(fitsCapacity(need, room)).toBe(shortfall === null);
  });

  it("a host without gpus fits no job that needs one", () => {
    expect(capacityShortfall({ cpus: 1, memoryMb: 0, gpus: 1 }, { slotsFree: 4, memoryFreeMb: 0 })).toBe(
      "needs 1 gpu, host has 0 free",
    );
  });

  it("takeRoom takes each unit out", () => {
    const left = { ...room, customFree: { ...room.customFree } };
    takeRoom(left, { cpus: 2, memoryMb: 100, gpus: 1, custom: { license: 1 } });
    expect(left).toEqual({ slotsFree: 2, memoryFreeMb: 900, gpusFree: 0, customFree: { license: 0 } });
    expect(room.customFree.license).toBe(1);
  });
});

function job(id: string, fields: Partial<JobView> = {}, tasks = [0]): JobView {
  return {
    id,
    priority: 0,
    createdAt: 0,
    seq: Number(id.replace(/\D/g, "")) || 0,
    cpus: 1,
    memoryMb: 0,
    requirements: null,
    rank: null,
    *readyTasks() {
      yield* tasks;
    },
    ...fields,
  };
}

function host(name: string, facts: Partial<HostFacts>, free: Partial<HostView> = {}): HostView {
  return {
    name,
    state: "ready",
    connected: true,
    slots: 8,
    slotsFree: 8,
    memoryFreeMb: 8192,
    ...(facts.gpus ? { gpusFree: facts.gpus.length } : {}),
    ...(facts.resources ? { customFree: { ...facts.resources } } : {}),
    facts: {
      name,
      pool: "default",
      os: "linux",
      arch: "x86_64",
      cpus: 8,
      memoryMb: 8192,
      memFreeMb: 8192,
      load1: 0,
      cpuFree: 1,
      diskFreeMb: 10_000,
      speed: 1,
      labels: {},
      slotsFree: 8,
      ...facts,
    },
    ...free,
  };
}

describe("the scheduler counts gpus and custom resources like slots", () => {
  it("places as many 1-gpu jobs as the host has gpus; the others wait", () => {
    const jobs = [job("1", { gpus: 1 }), job("2", { gpus: 1 }), job("3", { gpus: 1 })];
    const plan = schedule({ now: 0, jobs, hosts: [host("a", { gpus: ["0", "1"] })] });
    expect(plan.place.map((each) => each.jobId)).toEqual(["1", "2"]);
  });

  it("a job that needs no gpu still starts on the slots left", () => {
    const jobs = [job("1", { gpus: 1 }), job("2", { gpus: 1 }), job("3")];
    const plan = schedule({ now: 0, jobs, hosts: [host("a", { gpus: ["0"] })] });
    expect(plan.place.map((each) => each.jobId)).toEqual(["1", "3"]);
  });

  it("license=1 lets one of two jobs that need it start", () => {
    const jobs = [job("1", { custom: { license: 1 } }), job("2", { custom: { license: 1 } })];
    const plan = schedule({ now: 0, jobs, hosts: [host("a", { resources: { license: 1 } })] });
    expect(plan.place.map((each) => each.jobId)).toEqual(["1"]);
  });

  it("a gang asks per rank: two ranks of 2 gpus take two hosts of 2", () => {
    const gang = job("1", {
      gpus: 2,
      gang: { nodes: 2, nodesPerHost: 2, restartPool: null },
    });
    const hosts = [host("a", { gpus: ["0", "1"] }), host("b", { gpus: ["0", "1"] })];
    const plan = schedule({ now: 0, jobs: [gang], hosts });
    expect(plan.place).toHaveLength(1);
    const [placed] = plan.place;
    expect(placed.kind === "gang" && [...placed.ranks].sort()).toEqual(["a", "b"]);
  });

  it("a host that declares too few is not feasible; one that is busy is a shortfall explain names", () => {
    const needsTwo = job("1", { gpus: 2 });
    expect(infeasibility(needsTwo, host("a", { gpus: ["0"] }))).toBe("job needs 2 gpus, host has 1");
    expect(infeasibility(job("2", { custom: { license: 1 } }), host("a", {}))).toBe(
      "job needs 1 license, host has 0",
    );
    const busy = host("b", { gpus: ["0", "1"] }, { gpusFree: 1 });
    expect(explainHosts(needsTwo, [busy])).toEqual([
      { host: "b", eligible: true, reason: "busy: needs 2 gpus, host has 1 free" },
    ]);
  });

  it("a task whose memory grew is placed at its own size, its job's other tasks at the job's", () => {
    const grown = job(
      "1",
      { memoryMb: 100, taskMemoryMb: (index) => (index === 0 ? 400 : undefined) },
      [0, 1],
    );
    const plan = schedule({ now: 0, jobs: [grown], hosts: [host("a", {}, { memoryFreeMb: 300 })] });
    expect(plan.place.map((each) => each.taskIndex)).toEqual([1]);
    const roomy = schedule({ now: 0, jobs: [grown], hosts: [host("a", {}, { memoryFreeMb: 500 })] });
    expect(roomy.place.map((each) => each.taskIndex)).toEqual([0, 1]);
  });

  it("stopping a task makes room for a job only with the gpus it frees", () => {
    const running = (gpus: number): RunningTaskView => ({
      job: { id: "low", priority: 0, cpus: 1, memoryMb: 0, gpus, requirements: null, rank: null },
      taskIndex: 0,
      attempt: 1,
      host: "a",
      stopping: false,
      progress: { startedAt: 0, baseline: null, last: null },
      checkpointBytes: null,
      startedByPreemption: false,
      lastMovedAt: null,
    });
    const free = { slotsFree: 4, memoryFreeMb: 1000, gpusFree: 0 };
    expect(makesRoom({ cpus: 1, memoryMb: 0, gpus: 1 }, running(1), free)).toBe(true);
    expect(makesRoom({ cpus: 1, memoryMb: 0, gpus: 1 }, running(0), free)).toBe(false);
  });
});

describe("device ids given to an attempt", () => {
  const free: Record<string, string[]> = { a: ["0", "1", "3"], b: ["2"] };
  const freeOn = (name: string) => free[name] ?? [];
  it.each([
    ["one rank, one gpu", [{ host: "a", rank: 0 }], 1, [{ host: "a", rank: 0, gpus: ["0"] }]],
    ["one rank, two gpus", [{ host: "a", rank: 0 }], 2, [{ host: "a", rank: 0, gpus: ["0", "1"] }]],
    [
      "ranks sharing a host take different ones",
      [
        { host: "a", rank: 0 },
        { host: "a", rank: 1 },
        { host: "b", rank: 2 },
      ],
      1,
      [
        { host: "a", rank: 0, gpus: ["0"] },
        { host: "a", rank: 1, gpus: ["1"] },
        { host: "b", rank: 2, gpus: ["2"] },
      ],
    ],
    ["no gpus", [{ host: "b", rank: 0 }], 0, [{ host: "b", rank: 0 }]],
    ["too few free", [{ host: "b", rank: 0 }], 2, null],
    [
      "too few for the second rank on a host",
      [
        { host: "b", rank: 0 },
        { host: "b", rank: 1 },
      ],
      1,
      null,
    ],
  ])("%s", (_name, placement, gpus, assigned) => {
    expect(assignGpus(placement, gpus, freeOn)).toEqual(assigned);
  });

  it("custom units fit per rank", () => {
    expect(customFits({ license: 2 }, 1, { license: 2 })).toBe(true);
    expect(customFits({ license: 2 }, 2, { license: 3 })).toBe(false);
    expect(customFits(undefined, 4, {})).toBe(true);
    expect(customFits({ fpga: 1 }, 1, { license: 4 })).toBe(false);
  });
});

describe("what the job sees, and its cgroup", () => {
  it("exports its gpus and units", () => {
    expect(countableEnvironment({ gpus: ["1", "3"], resources: { license: 2, fpga_x: 1 } })).toEqual({
      CUDA_VISIBLE_DEVICES: "1,3",
      STEWARD_GPUS: "1,3",
      STEWARD_RESOURCE_LICENSE: "2",
      STEWARD_RESOURCE_FPGA_X: "1",
    });
    expect(countableEnvironment({})).toEqual({});
  });

  it("v1 denies the host's other GPUs (major 195); v2 writes no device rule", () => {
    const limits = { cpus: 1, deniedGpus: ["0", "2"] };
    expect(cgroupSettings(1, limits).filter((each) => each.controller === "devices")).toEqual([
      { controller: "devices", file: "devices.deny", value: "c 195:0 rwm" },
      { controller: "devices", file: "devices.deny", value: "c 195:2 rwm" },
    ]);
    expect(cgroupSettings(2, limits).some((each) => each.controller === "devices")).toBe(false);
  });
});

describe("memory grown after running out of memory", () => {
  it.each([
    [100, { memoryGrowth: 2 }, 200],
    [200, { memoryGrowth: 2 }, 400],
    [100, { memoryGrowth: 1.5 }, 150],
    [333, { memoryGrowth: 1.5 }, 500],
    [400, { memoryGrowth: 2, maxMemoryMb: 700 }, 700],
    [700, { memoryGrowth: 2, maxMemoryMb: 700 }, null],
    [100, {}, null],
    [0, { memoryGrowth: 2 }, null],
  ])("%d MB with %j: %s", (current, retry, grown) => {
    expect(grownMemoryMb(current, retry)).toBe(grown);
  });
});

describe("fitsCapacity agrees with capacityShortfall", () => {
  it("over random needs and rooms: fits exactly when no shortfall is named", () => {
    let seed = 20261127;
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return seed % n;
    };
    for (let i = 0; i < 2000; i++) {
      const need = {
        cpus: next(4) + 1,
        memoryMb: next(3) * 512,
        ...(next(2) ? { gpus: next(3) } : {}),
        ...(next(2) ? { custom: { license: next(3), fpga: next(2) } } : {}),
      };
      const room = {
        slotsFree: next(6),
        memoryFreeMb: next(4) * 512,
        ...(next(2) ? { gpusFree: next(3) } : {}),
        ...(next(2) ? { customFree: { license: next(3) } } : {}),
      };
      expect(fitsCapacity(need, room), JSON.stringify({ need, room })).toBe(
        capacityShortfall(need, room) === null,
      );
    }
  });
});

// Data affinity (OurGrid's storage affinity): the digests known of a job's inputs, the bytes of
// them each host's cache holds, and what a scheduling pass does with that: among hosts with room,
// after hosts the job broke its contract on (last) and its rank, the host holding more goes first,
// before the most free slots; a free host lacking the data is never left idle for a busy one that
// holds it (DATA_AFFINITY_MAX_IDLE_SECONDS = 0). Values are built in the tests' bodies.

import { describe, expect, it } from "vitest";
import {
  DATA_AFFINITY_MAX_IDLE_SECONDS,
  inputBytesByHost,
  knownInputDigests,
} from "../../../../src/broker/scheduler/data-affinity.ts";
import { schedule } from "../../../../src/broker/scheduler/schedule.ts";
import type { CachedObjects, JobView } from "../../../../src/broker/scheduler/view.ts";
import type { JobInput } from "../../../../src/common/model/input-spec.ts";
import { hostView, jobView, NOW, readyTasks } from "../../../helpers/scheduler-views.ts";

const A = "a".repeat(64);
const B = "b".repeat(64);
const C = "c".repeat(64);

/** By digest, the hosts holding it and its size: `{[digest]: {[host]: bytes}}`. */
function cachedOf(table: Record<string, Record<string, number>>): CachedObjects {
  return new Map(Object.entries(table).map(([digest, hosts]) => [digest, new Map(Object.entries(hosts))]));
}

describe("knownInputDigests", () => {
  it("takes each uploaded input's digest by its path, in the inputs' order", () => {
    expect(knownInputDigests(["x", "y"], { y: B, x: A })).toStrictEqual([A, B]);
  });

  it("takes a URL input's sha256 in lower case, and knows none for a URL input without one", () => {
    const inputs: JobInput[] = [
      { url: "https://data.example.org/a.nc", sha256: A.toUpperCase() },
      { url: "https://data.example.org/b.nc" },
    ];
    expect(knownInputDigests(inputs, null)).toStrictEqual([A]);
  });

  it("names each content once, however many inputs have it", () => {
    const inputs: JobInput[] = ["x", { url: "https://data.example.org/x", sha256: A, as: "copy" }, "y"];
    expect(knownInputDigests(inputs, { x: A, y: A })).toStrictEqual([A]);
  });

  it("knows no digest of an uploaded input the job kept none for (a job of an earlier version)", () => {
    expect(knownInputDigests(["x"], null)).toStrictEqual([]);
    expect(knownInputDigests(["x", "y"], { y: B })).toStrictEqual([B]);
  });

  it("does not take a digest from the map's prototype", () => {
    expect(knownInputDigests(["toString"], {})).toStrictEqual([]);
  });
});

describe("inputBytesByHost", () => {
  it("sums, host by host, the sizes of the job's digests each holds", () => {
    const cached = cachedOf({ [A]: { h1: 100, h2: 100 }, [B]: { h2: 50 }, [C]: { h3: 7 } });
    expect(inputBytesByHost([A, B], cached)).toStrictEqual(
      new Map([
        ["h1", 100],
        ["h2", 150],
      ]),
    );
  });

  it("is null when no host holds any of the digests, or nothing is known", () => {
    const cached = cachedOf({ [C]: { h3: 7 } });
    expect(inputBytesByHost([A, B], cached)).toBeNull();
    expect(inputBytesByHost([A], undefined)).toBeNull();
    expect(inputBytesByHost([A], new Map())).toBeNull();
    expect(inputBytesByHost(undefined, cached)).toBeNull();
    expect(inputBytesByHost([], cached)).toBeNull();
  });

  it("counts a host that holds an empty object, at 0 bytes", () => {
    expect(inputBytesByHost([A], cachedOf({ [A]: { h1: 0 } }))).toStrictEqual(new Map([["h1", 0]]));
  });
});

describe("a pass with data affinity", () => {
  /** Where the pass starts each task of the jobs, `job/task@host`. */
  function placed(jobs: JobView[], hosts: ReturnType<typeof hostView>[], cached?: CachedObjects): string[] {
    const plan = schedule({ now: NOW, jobs, hosts, ...(cached ? { cached } : {}) });
    return plan.place.map((each) => `${each.jobId}/${each.taskIndex}@${each.host}`);
  }

  it("starts the job on the host holding its input when both are free", () => {
    const hosts = [hostView("a"), hostView("b")];
    const cached = cachedOf({ [A]: { b: 1000 } });
    expect(placed([jobView("j", { inputDigests: [A] })], hosts, cached)).toStrictEqual(["j/0@b"]);
    // Without it, the name breaks the tie.
    expect(placed([jobView("j", { inputDigests: [A] })], hosts)).toStrictEqual(["j/0@a"]);
  });

  it("starts it on a free host lacking the data rather than wait for a busy one holding it (bound 0 s)", () => {
    expect(DATA_AFFINITY_MAX_IDLE_SECONDS).toBe(0);
    const hosts = [hostView("free"), hostView("busy", { slotsFree: 0 })];
    const cached = cachedOf({ [A]: { busy: 1000 } });
    const plan = schedule({ now: NOW, jobs: [jobView("j", { inputDigests: [A] })], hosts, cached });
    expect(plan.place.map((each) => each.host)).toStrictEqual(["free"]);
    // Nor does the pass ask to look again for the busy host.
    expect(plan.recheckAt).toBeUndefined();
  });

  it("prefers the host holding more of the job's bytes, before the most free slots", () => {
    const hosts = [
      hostView("roomy", { slots: 8 }),
      hostView("some", { slots: 2 }),
      hostView("most", { slots: 2 }),
    ];
    const cached = cachedOf({ [A]: { some: 10, most: 10 }, [B]: { most: 5 } });
    const job = jobView("j", { inputDigests: [A, B], ...readyTasks(0, 1, 2, 3, 4) });
    expect(placed([job], hosts, cached)).toStrictEqual([
      "j/0@most",
      "j/1@most",
      "j/2@some",
      "j/3@some",
      "j/4@roomy",
    ]);
  });

  it("lets the job's rank win over the data: data only breaks its ties", () => {
    const hosts = [hostView("fast", { facts: { speed: 3 } }), hostView("holder", { facts: { speed: 1 } })];
    const cached = cachedOf({ [A]: { holder: 1000 } });
    expect(placed([jobView("j", { inputDigests: [A], rank: "host.speed" })], hosts, cached)).toStrictEqual([
      "j/0@fast",
    ]);
  });

  it("puts a host the job broke its contract on last, whatever it holds", () => {
    const hosts = [hostView("a"), hostView("holder")];
    const cached = cachedOf({ [A]: { holder: 1000 } });
    const job = jobView("j", { inputDigests: [A], slowHosts: ["holder"] });
    expect(placed([job], hosts, cached)).toStrictEqual(["j/0@a"]);
  });

  it("scores each job by its own inputs, in one pass", () => {
    const hosts = [hostView("a"), hostView("b"), hostView("c")];
    const cached = cachedOf({ [A]: { a: 10 }, [B]: { c: 10 } });
    const jobs = [
      jobView("x", { seq: 1, inputDigests: [A] }),
      jobView("y", { seq: 2, inputDigests: [B] }),
      jobView("z", { seq: 3, inputDigests: [B] }),
    ];
    expect(placed(jobs, hosts, cached)).toStrictEqual(["x/0@a", "y/0@c", "z/0@c"]);
  });

  it("leaves a job whose inputs no host holds to the usual order (spread, then name)", () => {
    const hosts = [hostView("a", { slotsFree: 1 }), hostView("b", { slotsFree: 3 })];
    const cached = cachedOf({ [C]: { a: 10 } });
    expect(placed([jobView("j", { inputDigests: [A] })], hosts, cached)).toStrictEqual(["j/0@b"]);
  });
});

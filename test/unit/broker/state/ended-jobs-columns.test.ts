// EndedJobs: the headers of ended jobs kept in columns read back exactly as they were put.

import { describe, expect, it } from "vitest";
import { EndedJobs } from "../../../../src/broker/state/ended-jobs.ts";
import type { JobHeader } from "../../../../src/common/model/records.ts";

function header(id: string, overrides: Partial<JobHeader> = {}): JobHeader {
  return {
    id,
    name: `job ${id}`,
    owner: "alice",
    state: "succeeded",
    priority: 0,
    createdAt: 1_700_000_000_000,
    endedAt: 1_700_000_060_000,
    taskCount: 1,
    counts: { pending: 0, running: 0, succeeded: 1, failed: 0, cancelled: 0 },
    qos: "normal",
    ...overrides,
  };
}

describe("EndedJobs", () => {
  it.each([
    ["a numeric id", header("42")],
    ["another id", header("j-1", { owner: "bob", state: "failed", priority: -3, qos: "high" })],
    [
      "no end time, an array's counts",
      header("7", {
        endedAt: null,
        taskCount: 10,
        counts: { pending: 0, running: 0, succeeded: 6, failed: 3, cancelled: 1 },
        state: "failed",
      }),
    ],
    ["a cancelled job, a big priority", header("900000000001", { state: "cancelled", priority: 1e6 })],
  ])("gives back %s as it was put", (_name, put) => {
    const ended = new EndedJobs();
    ended.set(put);
    expect(ended.get(put.id)).toStrictEqual(put);
    expect(ended.has(put.id)).toBe(true);
    expect(ended.size).toBe(1);
  });

  it("holds many, in the order put; a header put again replaces the first; delete removes", () => {
    const ended = new EndedJobs();
    for (let i = 1; i <= 5000; i++) ended.set(header(String(i), { owner: i % 2 ? "alice" : "bob" }));
    ended.set(header("x"));
    ended.set(header("17", { state: "failed" }));
    expect(ended.size).toBe(5001);
    expect(ended.get("4999")).toStrictEqual(header("4999", { owner: "alice" }));
    expect(ended.get("17")?.state).toBe("failed");
    expect(ended.delete("18")).toBe(true);
    expect(ended.delete("18")).toBe(false);
    expect(ended.delete("x")).toBe(true);
    expect(ended.get("18")).toBeUndefined();
    expect(ended.has("x")).toBe(false);
    expect(ended.get("5001")).toBeUndefined();
    expect(ended.get("0")).toBeUndefined();
    const ids = [...ended.values()].map((each) => each.id);
    expect(ids).toHaveLength(4999);
    expect(ids.slice(0, 3)).toStrictEqual(["1", "2", "3"]);
    expect(ids[ids.length - 1]).toBe("17");
    expect(ids).not.toContain("18");
  });

  it("counts its headers by state as they are put, replaced and removed", () => {
    const ended = new EndedJobs();
    ended.set(header("1"));
    ended.set(header("2"));
    ended.set(header("j-3", { state: "failed" }));
    ended.set(header("2", { state: "cancelled" }));
    expect(Object.fromEntries(ended.countByState())).toEqual({ succeeded: 1, failed: 1, cancelled: 1 });
    ended.delete("1");
    ended.delete("j-3");
    ended.delete("nothing");
    expect(Object.fromEntries(ended.countByState())).toEqual({ cancelled: 1 });
  });
});

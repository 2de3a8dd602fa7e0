// Batches (scheduler/batches.ts): which tasks are alike for placement (batchKey), which jobs of a
// batch score hosts alike (scoreKey), and the batches a pass found no room for.

import { describe, expect, it } from "vitest";
import { batchKey, ExhaustedBatches, scoreKey } from "../../../../src/broker/scheduler/batches.ts";
import { type CompiledExpression, compileExpression } from "../../../../src/common/model/cel.ts";

type Batched = Parameters<typeof batchKey>[0];

const base: Batched = {
  cpus: 1,
  memoryMb: 0,
  requirements: null,
  expectedSeconds: undefined,
  checkpoints: false,
};

/** An expression built by hand, without its text: alike only to itself. */
function handMade(): CompiledExpression {
  return Object.assign(() => true, {}) as CompiledExpression;
}

const anonymous = handMade();

describe("batchKey", () => {
  it.each<[string, Partial<Batched>, Partial<Batched>, boolean]>([
    ["the same", {}, {}, true],
    ["cpus", { cpus: 1 }, { cpus: 2 }, false],
    ["memory", { memoryMb: 0 }, { memoryMb: 512 }, false],
    [
      "requirements of the same text, compiled twice",
      { requirements: compileExpression('host.arch == "x86_64"') },
      { requirements: compileExpression('host.arch == "x86_64"') },
      true,
    ],
    [
      "requirements of other texts",
      { requirements: compileExpression('host.arch == "x86_64"') },
      { requirements: compileExpression('host.arch == "arm64"') },
      false,
    ],
    ["requirements or none", { requirements: compileExpression("true") }, { requirements: null }, false],
    ["two expressions without text", { requirements: handMade() }, { requirements: handMade() }, false],
    ["one expression without text, twice", { requirements: anonymous }, { requirements: anonymous }, true],
    ["expected length", { expectedSeconds: 60 }, { expectedSeconds: 120 }, false],
    ["expected length or none", { expectedSeconds: 60 }, {}, false],
    ["checkpoints", { checkpoints: true }, { checkpoints: false }, false],
    ["GPUs", { gpus: 1 }, { gpus: 2 }, false],
    ["GPUs or none", { gpus: 1 }, {}, false],
    ["custom resources", { custom: { licence: 1 } }, { custom: { licence: 2 } }, false],
    ["custom resources or none", { custom: { licence: 1 } }, {}, false],
    ["the same workdir", { workdir: "/data/run1" }, { workdir: "/data/run1" }, true],
    ["workdirs", { workdir: "/data/run1" }, { workdir: "/data/run2" }, false],
    ["a workdir or none", { workdir: "/data/run1" }, {}, false],
    ["the same transfers", { transfers: ["s3-inputs"] }, { transfers: ["s3-inputs"] }, true],
    ["transfers", { transfers: ["s3-inputs"] }, { transfers: ["s3-inputs", "url-outputs"] }, false],
    ["transfers or none", { transfers: ["url-outputs"] }, {}, false],
    ["no transfers is none", { transfers: [] }, {}, true],
    ["a container or none", { container: { image: "alpine:3", hostPaths: [] } }, {}, false],
    [
      "containers naming the same host paths",
      { container: { image: "alpine:3", hostPaths: ["/data/in", "/data/out"] } },
      { container: { image: "alpine:3", hostPaths: ["/data/in", "/data/out"] } },
      true,
    ],
    [
      "host paths that read alike joined without a separator",
      { container: { image: "alpine:3", hostPaths: ["/data/a", "/b"] } },
      { container: { image: "alpine:3", hostPaths: ["/data/a/b"] } },
      false,
    ],
    [
      "custom resources, with or without GPUs",
      { custom: { licence: 1 }, gpus: 1 },
      { custom: { licence: 1 } },
      false,
    ],
  ])("%s: alike %s", (_, a, b, alike) => {
    expect(batchKey({ ...base, ...a }) === batchKey({ ...base, ...b })).toBe(alike);
  });
});

describe("scoreKey", () => {
  const batch = batchKey(base);
  it.each<[string, { rank: CompiledExpression | null; slowHosts?: string[] }, string | null | "a key"]>([
    ["no rank", { rank: null }, "a key"],
    ["a rank", { rank: compileExpression("host.speed") }, "a key"],
    ["no slow hosts listed", { rank: null, slowHosts: [] }, "a key"],
    ["hosts it broke its contract on: scored for itself", { rank: null, slowHosts: ["h1"] }, null],
  ])("%s", (_, job, expected) => {
    const key = scoreKey(job, batch);
    if (expected === null) expect(key).toBeNull();
    else expect(key).toEqual(expect.stringContaining(batch));
  });

  it("tells ranks apart within a batch, and batches apart with one rank", () => {
    const speed = compileExpression("host.speed");
    expect(scoreKey({ rank: speed }, batch)).toBe(scoreKey({ rank: compileExpression("host.speed") }, batch));
    expect(scoreKey({ rank: speed }, batch)).not.toBe(
      scoreKey({ rank: compileExpression("host.cpuFree") }, batch),
    );
    expect(scoreKey({ rank: speed }, batch)).not.toBe(scoreKey({ rank: null }, batch));
    expect(scoreKey({ rank: speed }, batch)).not.toBe(
      scoreKey({ rank: speed }, batchKey({ ...base, cpus: 2 })),
    );
  });

  it("tells jobs apart by their input digests only when some host holds them (data affinity)", () => {
    const a = "a".repeat(64);
    const b = "b".repeat(64);
    const plain = scoreKey({ rank: null }, batch);
    // Held nowhere (or not said): scored with the jobs that have no inputs.
    expect(scoreKey({ rank: null, inputDigests: [a] }, batch)).toBe(plain);
    expect(scoreKey({ rank: null, inputDigests: [a] }, batch, false)).toBe(plain);
    expect(scoreKey({ rank: null }, batch, true)).toBe(plain);
    // Held: alike only with the same digests.
    const held = scoreKey({ rank: null, inputDigests: [a] }, batch, true);
    expect(held).not.toBe(plain);
    expect(held).toBe(`${plain}\u0003${a}`);
    expect(scoreKey({ rank: null, inputDigests: [a] }, batch, true)).toBe(held);
    expect(scoreKey({ rank: null, inputDigests: [b] }, batch, true)).not.toBe(held);
    expect(scoreKey({ rank: null, inputDigests: [a, b] }, batch, true)).toBe(`${plain}\u0003${a},${b}`);
    expect(scoreKey({ rank: null, inputDigests: [a], slowHosts: ["h1"] }, batch, true)).toBeNull();
  });
});

describe("ExhaustedBatches", () => {
  it("holds the keys added, and only those", () => {
    const exhausted = new ExhaustedBatches();
    expect(exhausted.has("a")).toBe(false);
    exhausted.add("a");
    expect(exhausted.has("a")).toBe(true);
    expect(exhausted.has("b")).toBe(false);
  });
});

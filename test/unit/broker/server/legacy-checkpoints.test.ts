// A store of an earlier version kept checkpoint manifests as blobs only. At start, the live tasks
// with a restart point and no part recorded get their parts from those blobs (read once), so a
// restart finds the checkpoint; a store written since has parts, and nothing is read.

import { Readable } from "node:stream";
import { afterEach, beforeEach, expect, it } from "vitest";
import { legacyCheckpoints } from "../../../../src/broker/server/legacy-checkpoints.ts";
import { recoverState } from "../../../../src/broker/state/recover.ts";
import { restartManifest } from "../../../../src/broker/state/restart-manifest.ts";
import type { BlobStore } from "../../../../src/broker/store/blobs.ts";
import { DiskBlobStore } from "../../../../src/broker/store/disk-blobs.ts";
import type { StoreSnapshot } from "../../../../src/broker/store/store.ts";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import { readCheckpointManifest } from "../../../../src/common/protocol/messages.ts";
import { attempt, host, job, task } from "../../../conformance/store-suite.ts";
import { cleanup, tempDir } from "../../../helpers/steward.ts";

let dir: string;
let blobs: BlobStore;

beforeEach(() => {
  dir = tempDir("steward-legacy-checkpoints-");
  blobs = new DiskBlobStore(dir);
});

afterEach(() => cleanup(dir));

const sha = (letter: string) => letter.repeat(64);
const file = (path: string, letter: string, bytes: number) => ({ path, sha256: sha(letter), bytes });

async function put(key: string, value: unknown): Promise<void> {
  await blobs.write(key, Readable.from([typeof value === "string" ? value : JSON.stringify(value)]));
}

/** Job "one" (single host, restart point 3) and "gang" (two ranks, restart point 4), as an earlier version left them. */
function snapshot(): StoreSnapshot {
  return {
    jobs: [
      job("one", { state: "running" }),
      job("gang", { state: "running", spec: validateJobSpec({ command: "true", nodes: 2 }) }),
      job("none", { state: "running" }),
      job("climb", { state: "running" }),
    ],
    tasks: [
      task("one", 0, { state: "running", attempts: 2, checkpoint: { generation: 3, bytes: 5, at: 30 } }),
      task("gang", 0, { state: "running", attempts: 1, checkpoint: { generation: 4, bytes: 7, at: 40 } }),
      task("none", 0, { state: "running", attempts: 1 }),
      task("climb", 0, { state: "running", attempts: 1, checkpoint: { generation: 1, bytes: 1, at: 10 } }),
    ],
    attempts: [attempt("one", 0, 2), attempt("gang", 0, 1), attempt("none", 0, 1), attempt("climb", 0, 1)],
    hosts: [host("node-1")],
    tokens: [],
    meta: {},
    checkpointParts: [],
  };
}

async function earlierVersionBlobs(): Promise<void> {
  // The restart point, a manifest an unfinished commit left behind, and a manifest gone bad.
  await put("jobs/one/tasks/0/checkpoint/manifests/3.json", { files: [file("state", "a", 5)] });
  await put("jobs/one/tasks/0/checkpoint/manifests/4.json", { files: [file("state", "b", 5)] });
  await put(`jobs/one/tasks/0/checkpoint/objects/${sha("a")}`, "12345");
  // An object no manifest names (a checkpoint never committed), and one of a gang's.
  await put(`jobs/one/tasks/0/checkpoint/objects/${sha("9")}`, "xy");
  await put(`jobs/gang/tasks/0/checkpoint/objects/${sha("8")}`, "xyz");
  // Each rank's parts from the complete generation on.
  await put("jobs/gang/tasks/0/checkpoint/ranks/0/manifests/4.json", {
    files: [file("s", "c", 3)],
    gang: { rank: 0, generation: 4 },
  });
  await put("jobs/gang/tasks/0/checkpoint/ranks/1/manifests/4.json", {
    files: [file("s", "d", 4)],
    gang: { rank: 1, generation: 4 },
  });
  await put("jobs/gang/tasks/0/checkpoint/ranks/0/manifests/5.json", {
    files: [file("s", "e", 3)],
    gang: { rank: 0, generation: 5 },
  });
  await put("jobs/gang/tasks/0/checkpoint/ranks/1/manifests/5.json", "{not json");
  await put("jobs/gang/tasks/0/checkpoint/ranks/1/manifests/0.json", { files: [] });
  // A manifest written before paths were checked: recorded, and refused when a restart asks for it.
  await put("jobs/climb/tasks/0/checkpoint/manifests/1.json", { files: [file("../../etc/x", "5", 1)] });
  // A task without a restart point: not read.
  await put("jobs/none/tasks/0/checkpoint/manifests/1.json", { files: [file("x", "f", 1)] });
}

it("records the manifests of an earlier version's store as parts, and a restart finds them", async () => {
  await earlierVersionBlobs();
  const before = snapshot();
  const { parts, unnamed } = await legacyCheckpoints(before, blobs);
  expect(
    parts.map(({ jobId, rank, generation, attempt, bytes, at }) => ({
      jobId,
      rank,
      generation,
      attempt,
      bytes,
      at,
    })),
  ).toStrictEqual([
    { jobId: "one", rank: 0, generation: 3, attempt: 2, bytes: 5, at: 30 },
    { jobId: "gang", rank: 0, generation: 4, attempt: 1, bytes: 3, at: 40 },
    { jobId: "gang", rank: 0, generation: 5, attempt: 1, bytes: 3, at: 40 },
    { jobId: "gang", rank: 1, generation: 4, attempt: 1, bytes: 4, at: 40 },
    { jobId: "climb", rank: 0, generation: 1, attempt: 1, bytes: 1, at: 10 },
  ]);
  const state = recoverState({ ...before, checkpointParts: parts }, 100);
  expect(restartManifest(state.jobs.get("one")!, 0)).toStrictEqual({ files: [file("state", "a", 5)] });
  expect(restartManifest(state.jobs.get("gang")!, 0, 1)).toStrictEqual({
    files: [file("s", "d", 4)],
    gang: { rank: 1, generation: 4 },
  });
  expect(restartManifest(state.jobs.get("none")!, 0)).toBeNull();
  const climbing = restartManifest(state.jobs.get("climb")!, 0);
  expect(() => readCheckpointManifest(climbing)).toThrow(/files\[0\]\.path: "\.\.\/\.\.\/etc\/x"/);
  // Objects no manifest names are handed over as uploads of every rank: their next commits drop them.
  expect(unnamed).toStrictEqual([
    { jobId: "one", taskIndex: 0, ranks: [0], sha256: sha("9"), bytes: 2 },
    { jobId: "gang", taskIndex: 0, ranks: [0, 1], sha256: sha("8"), bytes: 3 },
  ]);

  // Once recorded, nothing is read again.
  expect(await legacyCheckpoints({ ...before, checkpointParts: parts }, blobs)).toStrictEqual({
    parts: [],
    unnamed: [],
  });
});

it("a store without blobs of checkpoints gives no parts", async () => {
  expect(await legacyCheckpoints(snapshot(), blobs)).toStrictEqual({ parts: [], unnamed: [] });
});

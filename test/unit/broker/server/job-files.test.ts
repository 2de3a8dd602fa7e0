// The routes' port to a job's files over the blob store: each file at the key the blob store's
// layout gives it, its size (null when absent), its bytes from an offset, an attempt's outputs by
// path, and a job's files deleted together; an input's digest stored beside it.

import { createHash } from "node:crypto";
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { afterEach, beforeEach, expect, it } from "vitest";
import type { JobFiles } from "../../../../src/broker/api/ports.ts";
import { jobFilesIn } from "../../../../src/broker/server/job-files.ts";
import type { BlobStore } from "../../../../src/broker/store/blobs.ts";
import { DiskBlobStore } from "../../../../src/broker/store/disk-blobs.ts";
import { cleanup, tempDir } from "../../../helpers/steward.ts";

let dir: string;
let blobs: BlobStore;
let files: JobFiles;

beforeEach(() => {
  dir = tempDir("steward-job-files-");
  blobs = new DiskBlobStore(dir);
  files = jobFilesIn(blobs);
});

afterEach(() => cleanup(dir));

const content = (value: string) => Readable.from([Buffer.from(value)]);
const keys = async () => (await blobs.list("jobs")).map((blob) => blob.key);

it("stores inputs, outputs and checkpoint objects where the layout puts them, answering their sizes", async () => {
  expect(await files.storeInput("7", "data/in.txt", content("input"))).toStrictEqual({
    bytes: 5,
    sha256: createHash("sha256").update("input").digest("hex"),
  });
  expect(await files.storeOutput("7", 2, 3, "out.txt", content("output!"))).toBe(7);
  expect(await files.storeCheckpointObject("7", 2, "a".repeat(64), content("object"))).toBe(6);
  expect(await keys()).toStrictEqual([
    "jobs/7/input-digests/data/in.txt",
    "jobs/7/inputs/data/in.txt",
    "jobs/7/tasks/2/attempts/3/outputs/out.txt",
    `jobs/7/tasks/2/checkpoint/objects/${"a".repeat(64)}`,
  ]);
});

it("reads a file's size and bytes (from an offset), and answers a missing one's size as null", async () => {
  await blobs.write("jobs/7/tasks/0/attempts/1/stdout", content("hello log"));
  await blobs.write("jobs/7/tasks/0/attempts/1/rank-2/stderr", content("rank two"));
  const log = files.log("7", 0, 1, "stdout", 0);
  expect(await log.size()).toBe(9);
  expect(await text(log.read(6))).toBe("log");
  expect(await text(files.log("7", 0, 1, "stderr", 2).read())).toBe("rank two");
  expect(await files.log("7", 0, 1, "stderr", 0).size()).toBeNull();
  await files.storeInput("7", "in.txt", content("abc"));
  expect(await text(files.input("7", "in.txt").read())).toBe("abc");
  expect(await files.output("7", 0, 1, "none.txt").size()).toBeNull();
});

it("lists an attempt's outputs by their paths, sorted", async () => {
  await files.storeOutput("7", 1, 2, "b/two.txt", content("22"));
  await files.storeOutput("7", 1, 2, "a.txt", content("1"));
  await files.storeOutput("7", 1, 3, "other.txt", content("333"));
  expect(await files.outputs("7", 1, 2)).toStrictEqual([
    { path: "a.txt", bytes: 1 },
    { path: "b/two.txt", bytes: 2 },
  ]);
  expect(await files.outputs("7", 0, 1)).toStrictEqual([]);
});

it("deletes a checkpoint object alone, and a job's files all together", async () => {
  const sha = "b".repeat(64);
  await files.storeCheckpointObject("7", 0, sha, content("object"));
  await files.storeInput("7", "in.txt", content("abc"));
  await files.storeInput("70", "in.txt", content("another job's"));
  await files.deleteCheckpointObject("7", 0, sha);
  expect(await files.checkpointObject("7", 0, sha).size()).toBeNull();
  expect(await keys()).toStrictEqual([
    "jobs/7/input-digests/in.txt",
    "jobs/7/inputs/in.txt",
    "jobs/70/input-digests/in.txt",
    "jobs/70/inputs/in.txt",
  ]);
  await files.deleteJobFiles("7");
  expect(await keys()).toStrictEqual(["jobs/70/input-digests/in.txt", "jobs/70/inputs/in.txt"]);
});

it("keeps an input's SHA-256 beside it, and answers null for an input stored without one", async () => {
  await files.storeInput("7", "data/in.txt", content("input"));
  expect(await files.inputDigest("7", "data/in.txt")).toBe(
    createHash("sha256").update("input").digest("hex"),
  );
  await blobs.write("jobs/8/inputs/old.txt", content("stored by an earlier version"));
  expect(await files.inputDigest("8", "old.txt")).toBeNull();
  expect(await files.inputDigest("7", "none.txt")).toBeNull();
});

it("stores no digest of an upload that fails halfway, and lets the error through", async () => {
  const failing = new Readable({
    read() {
      this.push(Buffer.from("part"));
      this.destroy(new Error("upload cut"));
    },
  });
  await expect(files.storeInput("7", "cut.txt", failing)).rejects.toThrow("upload cut");
  expect(await keys()).toStrictEqual([]);
});

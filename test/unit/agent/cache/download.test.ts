// One download against a real HTTP server on loopback: the whole file with its digest and
// validators; a transfer cut halfway resumed with Range (206) where the server allows, started
// over where it does not, where nothing ties the rest to the same version, or where the part is
// gone (416); tries again after a 503, not after a 404, and gives up after its tries naming the
// source (and the word its source reads from a failed answer: an S3 error code); a wrong digest
// refused naming the source and both digests; a conditional request answered 304; a write refused
// for want of space not tried again.

import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  DigestMismatchError,
  DownloadError,
  type DownloadSource,
  download,
  shownUrl,
} from "../../../../src/agent/cache/download.ts";
import { type FileServer, type ServedFile, startFileServer } from "../../../helpers/file-server.ts";
import { describeSmallFilesystem, SmallFilesystem } from "../../../helpers/small-filesystem.ts";
import { cleanup, tempDir } from "../../../helpers/steward.ts";

const POLICY = { tries: 3, firstDelayMs: 10, maxDelayMs: 20, idleTimeoutMs: 5_000 };
const CONTENT = Buffer.from("0123456789".repeat(1000));
const DIGEST = createHash("sha256").update(CONTENT).digest("hex");

let server: FileServer;
let dir: string;
beforeEach(async () => {
  server = await startFileServer();
  dir = tempDir("steward-download-");
});
afterEach(async () => {
  await server.close();
  cleanup(dir);
});

function source(path: string): DownloadSource {
  const url = `${server.url}${path}`;
  return { name: shownUrl(url), open: (headers, signal) => fetch(url, { headers, signal }) };
}

function serve(file: Partial<ServedFile>): void {
  server.files.set("/data.bin", { content: CONTENT, ...file });
}

const target = () => join(dir, "data.bin");

describe("download", () => {
  it("fetches the whole file, with its digest, size and validators", async () => {
    serve({});
    const result = await download(source("/data.bin"), target(), { policy: POLICY });
    expect(result).toMatchObject({
      kind: "fetched",
      sha256: DIGEST,
      bytes: CONTENT.length,
      received: CONTENT.length,
    });
    expect(result.kind === "fetched" && result.validators.etag).toMatch(/^"/);
    expect(readFileSync(target()).equals(CONTENT)).toBe(true);
  });

  it.each([
    ["a strong ETag: the rest with Range and If-Range", {}, undefined, "bytes=3000-", 206, CONTENT.length],
    ["Last-Modified alone", { etag: false }, undefined, "bytes=3000-", 206, CONTENT.length],
    [
      "no validator but a digest to check",
      { etag: false, lastModified: false },
      DIGEST,
      "bytes=3000-",
      206,
      CONTENT.length,
    ],
    [
      "no validator and no digest: started over",
      { etag: false, lastModified: false },
      undefined,
      null,
      200,
      3000 + CONTENT.length,
    ],
    [
      "a server without ranges answers the whole again",
      { ranges: false },
      undefined,
      "bytes=3000-",
      200,
      3000 + CONTENT.length,
    ],
  ])("a transfer cut halfway, %s", async (_, file, sha256, range, status, received) => {
    serve({ cuts: 1, cutAfter: 3000, ...file });
    const result = await download(source("/data.bin"), target(), {
      policy: POLICY,
      ...(sha256 ? { sha256 } : {}),
    });
    expect(result).toMatchObject({ kind: "fetched", sha256: DIGEST, bytes: CONTENT.length, received });
    expect(readFileSync(target()).equals(CONTENT)).toBe(true);
    expect(server.requests.map((each) => [each.range, each.status])).toStrictEqual([
      [null, 200],
      [range, status],
    ]);
  });

  it("starts over when the part asked for is past the end of a file that shrank meanwhile (416)", async () => {
    const shorter = CONTENT.subarray(0, 2000);
    serve({ cuts: 1, cutAfter: 3000, etag: false, lastModified: false, afterCut: shorter });
    const sha256 = createHash("sha256").update(shorter).digest("hex");
    const result = await download(source("/data.bin"), target(), { policy: POLICY, sha256 });
    expect(result).toMatchObject({ kind: "fetched", sha256, bytes: 2000 });
    expect(readFileSync(target()).equals(shorter)).toBe(true);
    expect(server.requests.map((each) => [each.range, each.status])).toStrictEqual([
      [null, 200],
      ["bytes=3000-", 416],
      [null, 200],
    ]);
  });

  it("tries again after a 503, with a back-off", async () => {
    serve({ failures: 2, failStatus: 503 });
    const result = await download(source("/data.bin"), target(), { policy: POLICY });
    expect(result.kind).toBe("fetched");
    expect(server.requests.map((each) => each.status)).toStrictEqual([503, 503, 200]);
  });

  it("gives up after its tries, naming the URL (without its query) and the last failure", async () => {
    serve({ failures: 10, failStatus: 502 });
    const url = source("/data.bin?token=secret");
    const failure = download(url, target(), { policy: POLICY });
    await expect(failure).rejects.toThrow(DownloadError);
    await expect(failure).rejects.toThrow(`${server.url}/data.bin: HTTP 502 (tried 3 times)`);
    expect(server.requests).toHaveLength(3);
  });

  it("does not try again after a 404", async () => {
    await expect(download(source("/none"), target(), { policy: POLICY })).rejects.toThrow(
      `${server.url}/none: HTTP 404`,
    );
    expect(server.requests).toHaveLength(1);
  });

  it("names a failed answer by the word its source reads from it, tried again or not as its status says", async () => {
    const worded = (path: string): DownloadSource => ({
      ...source(path),
      refusal: async (response) => {
        await response.body?.cancel();
        return `Word${response.status}`;
      },
    });
    await expect(download(worded("/none"), target(), { policy: POLICY })).rejects.toThrow(
      `${server.url}/none: HTTP 404 Word404`,
    );
    expect(server.requests).toHaveLength(1);
    serve({ failures: 10, failStatus: 503 });
    await expect(download(worded("/data.bin"), join(dir, "other"), { policy: POLICY })).rejects.toThrow(
      `${server.url}/data.bin: HTTP 503 Word503 (tried 3 times)`,
    );
  });

  it("refuses a file whose digest is not the one expected, naming the URL and both digests", async () => {
    serve({});
    const expected = "f".repeat(64);
    const failure = download(source("/data.bin"), target(), { policy: POLICY, sha256: expected });
    await expect(failure).rejects.toThrow(DigestMismatchError);
    await expect(failure).rejects.toThrow(
      `sha256 mismatch for ${server.url}/data.bin: expected ${expected}, got ${DIGEST}`,
    );
  });

  it("answers not-modified to a conditional request the server answers 304", async () => {
    serve({});
    const first = await download(source("/data.bin"), target(), { policy: POLICY });
    const etag = first.kind === "fetched" ? first.validators.etag : undefined;
    const again = await download(source("/data.bin"), join(dir, "again"), {
      policy: POLICY,
      conditional: { "if-none-match": etag ?? "" },
    });
    expect(again).toStrictEqual({ kind: "not-modified" });
    expect(server.requests.map((each) => each.status)).toStrictEqual([200, 304]);
  });

  it("gives a try up when no byte comes for its idle time", async () => {
    serve({ trickleBytes: 100, trickleMs: 400 });
    const failure = download(source("/data.bin"), target(), {
      policy: { ...POLICY, tries: 2, idleTimeoutMs: 100 },
    });
    await expect(failure).rejects.toThrow("no byte came in time (tried 2 times)");
  });
});

describe("shownUrl", () => {
  it.each([
    ["https://user:pass@h.example:8443/a/b.dat?sig=x#f", "https://h.example:8443/a/b.dat"],
    ["http://h/a", "http://h/a"],
  ])("%s", (url, shown) => {
    expect(shownUrl(url)).toBe(shown);
  });
});

describeSmallFilesystem("the download's full-disk test", "download into a full file system", () => {
  it("is not tried again: the write's own error (ENOSPC) goes up, after one request", async () => {
    const disk = SmallFilesystem.mount(1);
    try {
      serve({});
      disk.fill();
      const failure = download(source("/data.bin"), join(disk.dir, "data.bin"), { policy: POLICY });
      await expect(failure).rejects.toMatchObject({ code: "ENOSPC" });
      expect(server.requests).toHaveLength(1);
    } finally {
      disk.unmount();
    }
  });
});

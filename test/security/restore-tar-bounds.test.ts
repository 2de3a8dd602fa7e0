// The restore's tar reader has bounds and reads linearly: a small gzip declaring a 32 MB PAX
// header is refused at once, naming the bound (it took 21.5 s and 366 MB when the reader held
// whatever a header declared, rebuilding its buffer per chunk); a manifest larger than a backup's
// is refused before it is read; a size that is not a byte count is refused; 100,000 entries are
// read in linear time. Real gzipped files restored into real folders.

import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { restoreBackup } from "../../src/broker/backup/restore.ts";
import { manifestEntry, paxRecord, TAR_END, tarEntry, tarHeader, writeGzip } from "../helpers/hostile-tar.ts";
import { cleanup, tempDir } from "../helpers/steward.ts";

let folder: string | undefined;

afterEach(() => {
  if (folder) cleanup(folder);
  folder = undefined;
});

/** Restores the archive made of `parts`; the error's message and the seconds it took. */
async function restore(parts: Buffer[]): Promise<{ message: string; seconds: number; gzipBytes: number }> {
  folder = tempDir("steward-restore-bounds-");
  const archive = join(folder, "hostile.tar.gz");
  const gzipBytes = writeGzip(archive, parts);
  const started = performance.now();
  const message = await restoreBackup(archive, join(folder, "data"), join(folder, "blobs")).then(
    () => "restored",
    (error: Error) => error.message,
  );
  return { message, seconds: (performance.now() - started) / 1000, gzipBytes };
}

describe("the restore's tar reader is bounded", () => {
  it("refuses a PAX header declared at 32 MB at once, naming the bound", async () => {
    const size = 32 * 1024 * 1024;
    const { message, seconds, gzipBytes } = await restore([
      tarHeader("PaxHeader", size, "x"),
      Buffer.alloc(size, "a"),
      TAR_END,
    ]);
    expect(gzipBytes).toBeLessThan(64 * 1024);
    expect(message).toBe(
      `the archive declares a PAX header of ${size} bytes, more than the 65536 a backup's may have`,
    );
    expect(seconds).toBeLessThan(3);
  });

  it("refuses a manifest larger than 64 KiB before reading it", async () => {
    const size = 16 * 1024 * 1024;
    const { message } = await restore([tarEntry("steward-backup.json", Buffer.alloc(size, " ")), TAR_END]);
    expect(message).toMatch(
      /is not a Steward backup \(its steward-backup.json is 16777216 bytes, more than 65536\)$/,
    );
  });

  it("refuses a PAX size that is not a byte count, and a second manifest", async () => {
    const pax = Buffer.from(paxRecord("size", "1e400"));
    const bad = await restore([
      manifestEntry(),
      tarEntry("PaxHeader", pax, "x"),
      tarHeader("steward.db", 0),
      TAR_END,
    ]);
    expect(bad.message).toBe("the archive gives steward.db a size that is not a byte count (1e400)");
    const twice = await restore([manifestEntry(), manifestEntry(), TAR_END]);
    expect(twice.message).toMatch(/holds steward-backup.json twice$/);
  });

  it("reads 100,000 entries in linear time, holding nothing of them", async () => {
    const pax = tarEntry("PaxHeader", Buffer.from(paxRecord("path", "blobs/x")), "x");
    const { message, seconds } = await restore([manifestEntry(), ...Array(100_000).fill(pax), TAR_END]);
    expect(message).toMatch(/holds no database \(steward.db\)$/);
    expect(seconds).toBeLessThan(10);
    expect(existsSync(join(folder ?? "", "data", "steward.db"))).toBe(false);
  });
});

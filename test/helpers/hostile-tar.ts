// Tar archives built by hand for the restore's hostile-input tests: any entry type and declared
// size, whatever the bytes that follow (the real writer, src/broker/backup/tar.ts, never lies).

import { writeFileSync } from "node:fs";
import { gzipSync } from "node:zlib";

const BLOCK = 512;

/** One ustar header block: `type` "0" (a file) or "x" (a PAX header), declaring `size` bytes. */
export function tarHeader(name: string, size: number | string, type = "0"): Buffer {
  const block = Buffer.alloc(BLOCK);
  block.write(name, 0, 100, "utf8");
  block.write("0000600\0", 100);
  block.write("0000000\0", 108);
  block.write("0000000\0", 116);
  const octal = typeof size === "number" ? size.toString(8).padStart(11, "0") : size;
  block.write(`${octal}\0`, 124, 12, "latin1");
  block.write("00000000000\0", 136);
  block.fill(0x20, 148, 156);
  block.write(type, 156);
  block.write("ustar\0", 257);
  block.write("00", 263);
  let sum = 0;
  for (const byte of block) sum += byte;
  block.write(`${sum.toString(8).padStart(6, "0")}\0 `, 148, 8, "latin1");
  return block;
}

/** Zeros to the next block boundary after `size` bytes. */
export function tarPadding(size: number): Buffer {
  return Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK);
}

/** A whole entry: its header, its bytes, their padding. */
export function tarEntry(name: string, data: Buffer, type = "0"): Buffer {
  return Buffer.concat([tarHeader(name, data.byteLength, type), data, tarPadding(data.byteLength)]);
}

/** One PAX record (`LEN key=value\n`, the length counting its own digits). */
export function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  let length = body.length + 1;
  while (`${length}${body}`.length !== length) length += 1;
  return `${length}${body}`;
}

export const TAR_END = Buffer.alloc(2 * BLOCK);

/** A valid manifest entry, as a Steward backup starts. */
export function manifestEntry(): Buffer {
  const text = `${JSON.stringify({ format: 1, createdAt: new Date().toISOString(), store: "sqlite" })}\n`;
  return tarEntry("steward-backup.json", Buffer.from(text));
}

/** Writes the parts, gzipped, to `path`; answers the gzip's size. */
export function writeGzip(path: string, parts: Buffer[]): number {
  const gzip = gzipSync(Buffer.concat(parts));
  writeFileSync(path, gzip);
  return gzip.byteLength;
}

// A small POSIX tar (ustar, with PAX records for long names and large sizes): enough for Steward's
// backups, which hold regular files only. Node has zlib but no tar, and a backup must stream (the
// blobs may be far larger than memory), so the writer yields chunks and the reader takes a stream.

import type { Readable } from "node:stream";

/** Where a file's bytes go on reading. */
export interface FileSink {
  write(chunk: Buffer): Promise<void>;
  close(): Promise<void>;
}

const BLOCK = 512;
/** The largest size the header's 11 octal digits hold; larger ones go in a PAX record. */
const USTAR_MAX_SIZE = 0o77777777777;

function field(header: Buffer, offset: number, length: number, text: string): void {
  header.write(text, offset, length, "utf8");
}

function octal(header: Buffer, offset: number, length: number, value: number): void {
  field(header, offset, length, `${value.toString(8).padStart(length - 1, "0")}\0`);
}

function header(name: string, size: number, type: "0" | "x", mtime: number): Buffer {
  const block = Buffer.alloc(BLOCK);
  field(block, 0, 100, name);
  octal(block, 100, 8, type === "x" ? 0o644 : 0o600);
  octal(block, 108, 8, 0);
  octal(block, 116, 8, 0);
  octal(block, 124, 12, Math.min(size, USTAR_MAX_SIZE));
  octal(block, 136, 12, Math.floor(mtime / 1000));
  block.fill(0x20, 148, 156); // the checksum counts its own field as spaces
  field(block, 156, 1, type);
  field(block, 257, 6, "ustar\0");
  field(block, 263, 2, "00");
  let sum = 0;
  for (const byte of block) sum += byte;
  field(block, 148, 8, `${sum.toString(8).padStart(6, "0")}\0 `);
  return block;
}

function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`;
  // The length counts its own digits.
  let length = body.length + 1;
  while (`${length}${body}`.length !== length) length += 1;
  return `${length}${body}`;
}

/** The header blocks of one file: a PAX record first when the name or the size does not fit ustar. */
export function fileHeader(name: string, size: number, mtime = Date.now()): Buffer {
  const records: string[] = [];
  if (Buffer.byteLength(name) > 99) records.push(paxRecord("path", name));
  if (size > USTAR_MAX_SIZE) records.push(paxRecord("size", String(size)));
  const own = header(Buffer.byteLength(name) > 99 ? name.slice(0, 90) : name, size, "0", mtime);
  if (records.length === 0) return own;
  const pax = Buffer.from(records.join(""));
  return Buffer.concat([header("PaxHeader", pax.byteLength, "x", mtime), pax, padding(pax.byteLength), own]);
}

/** Zeros up to the next block boundary after `size` bytes. */
export function padding(size: number): Buffer {
  return Buffer.alloc((BLOCK - (size % BLOCK)) % BLOCK);
}

/** Two zero blocks end an archive. */
export const TAR_END = Buffer.alloc(2 * BLOCK);

/**
 * The largest PAX extended header a reader takes: Steward writes one for a long name or a large
 * size (well under 4 KiB), and a declared size is otherwise what the reader would hold in memory.
 */
export const MAX_PAX_HEADER_BYTES = 64 * 1024;

/**
 * Reads exact byte counts from a stream, linearly: the chunks that came are kept as they are and
 * a read joins only the bytes it answers (never the whole held buffer again per chunk).
 */
class ByteReader {
  #chunks: AsyncIterator<Buffer>;
  #held: Buffer[] = [];
  #heldBytes = 0;

  constructor(stream: Readable) {
    this.#chunks = stream[Symbol.asyncIterator]();
  }

  /** The next `n` bytes, or fewer at the end of the stream. */
  async read(n: number): Promise<Buffer> {
    while (this.#heldBytes < n) {
      const next = await this.#chunks.next();
      if (next.done) break;
      const chunk = next.value as Buffer;
      if (chunk.byteLength === 0) continue;
      this.#held.push(chunk);
      this.#heldBytes += chunk.byteLength;
    }
    const first = this.#held[0];
    if (first !== undefined && first.byteLength >= n) return this.#take(n);
    const parts: Buffer[] = [];
    let left = Math.min(n, this.#heldBytes);
    while (left > 0) {
      const part = this.#take(Math.min(left, this.#held[0].byteLength));
      parts.push(part);
      left -= part.byteLength;
    }
    return parts.length === 1 ? parts[0] : Buffer.concat(parts);
  }

  /** The first `n` bytes of the first chunk held (n at most its length). */
  #take(n: number): Buffer {
    const first = this.#held[0];
    const out = first.subarray(0, n);
    if (n === first.byteLength) this.#held.shift();
    else this.#held[0] = first.subarray(n);
    this.#heldBytes -= n;
    return out;
  }

  /** Hands the next `n` bytes to `sink` (or drops them), without holding them all. */
  async copy(n: number, sink: ((chunk: Buffer) => Promise<void>) | null): Promise<void> {
    let left = n;
    while (left > 0) {
      const chunk = await this.read(Math.min(left, 1 << 20));
      if (chunk.byteLength === 0) throw new Error("the archive ends inside a file");
      if (sink) await sink(chunk);
      left -= chunk.byteLength;
    }
  }
}

function readOctal(block: Buffer, offset: number, length: number): number {
  const text = block
    .toString("latin1", offset, offset + length)
    .replace(/\0.*$/s, "")
    .trim();
  return text === "" ? 0 : Number.parseInt(text, 8);
}

function parsePax(data: Buffer): Map<string, string> {
  const records = new Map<string, string>();
  let at = 0;
  while (at < data.byteLength) {
    const space = data.indexOf(0x20, at);
    const length = Number(data.toString("latin1", at, space));
    if (!(length > 0)) break;
    const record = data.toString("utf8", space + 1, at + length - 1);
    const equals = record.indexOf("=");
    records.set(record.slice(0, equals), record.slice(equals + 1));
    at += length;
  }
  return records;
}

/**
 * Calls `onFile` for each regular file of the archive with its name and size; `onFile` returns a
 * writer for its bytes (or null to skip them). Other entries (folders, links) are refused: Steward's
 * backups hold none, and a link could lead a later file outside the target.
 */
export async function readTar(
  stream: Readable,
  onFile: (name: string, size: number) => Promise<FileSink | null>,
): Promise<void> {
  const reader = new ByteReader(stream);
  let pax = new Map<string, string>();
  for (;;) {
    const block = await reader.read(BLOCK);
    if (block.byteLength < BLOCK) throw new Error("the archive is cut short (no end blocks)");
    if (block.every((byte) => byte === 0)) return;
    let sum = 0;
    for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 0x20 : block[i];
    if (sum !== readOctal(block, 148, 8)) throw new Error("not a tar archive (bad header checksum)");
    const type = String.fromCharCode(block[156] || 0x30);
    let size = readOctal(block, 124, 12);
    if (!Number.isSafeInteger(size)) throw new Error("not a tar archive (a size that is not a number)");
    if (type === "x") {
      if (size > MAX_PAX_HEADER_BYTES)
        throw new Error(
          `the archive declares a PAX header of ${size} bytes, more than the ${MAX_PAX_HEADER_BYTES} a backup's may have`,
        );
      const data = await reader.read(size);
      if (data.byteLength < size) throw new Error("the archive ends inside a PAX header");
      await reader.read(padding(size).byteLength);
      pax = parsePax(data);
      continue;
    }
    if (type !== "0") throw new Error(`the archive holds an entry of type ${type}: only files are expected`);
    const prefix = block.toString("utf8", 345, 500).replace(/\0.*$/s, "");
    const short = block.toString("utf8", 0, 100).replace(/\0.*$/s, "");
    const name = pax.get("path") ?? (prefix ? `${prefix}/${short}` : short);
    if (pax.has("size")) size = Number(pax.get("size"));
    if (!Number.isSafeInteger(size) || size < 0)
      throw new Error(`the archive gives ${name} a size that is not a byte count (${pax.get("size")})`);
    pax = new Map();
    const sink = await onFile(name, size);
    await reader.copy(size, sink ? (chunk) => sink.write(chunk) : null);
    if (sink) await sink.close();
    await reader.read(padding(size).byteLength);
  }
}

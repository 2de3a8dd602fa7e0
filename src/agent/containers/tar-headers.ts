// The headers of a tar archive (POSIX ustar, with pax extended headers and GNU long names), as
// image layers and oci-archive files hold them. Pure: 512-byte blocks in, entries out; the reader
// (tar-reader.ts) feeds the blocks.

/** One member of an archive: its name and kind, as its headers (and any pax or GNU record before it) say. */
export interface TarEntry {
  path: string;
  type: "file" | "directory" | "symlink" | "hardlink" | "other";
  /** The type flag as written, for `other` (devices, FIFOs). */
  flag: string;
  size: number;
  mode: number;
  uid: number;
  gid: number;
  mtime: number;
  /** A link's target (symlink or hard link). */
  linkpath: string;
}

/** What a header block is: an entry, a record for the next entry (pax `x`, GNU `L`/`K`), or the end. */
export type HeaderBlock =
  | { kind: "entry"; entry: TarEntry }
  | { kind: "pax" | "pax-global" | "long-name" | "long-link"; size: number }
  | { kind: "end" };

export const BLOCK = 512;

function text(block: Uint8Array, offset: number, length: number): string {
  const field = block.subarray(offset, offset + length);
  const end = field.indexOf(0);
  return Buffer.from(end < 0 ? field : field.subarray(0, end)).toString("utf8");
}

/** A numeric field: octal text, or base-256 when its first byte has the high bit (GNU, large sizes). */
export function numberField(block: Uint8Array, offset: number, length: number): number {
  const field = block.subarray(offset, offset + length);
  if (field[0] & 0x80) {
    let value = field[0] & 0x7f;
    for (let i = 1; i < field.length; i++) value = value * 256 + field[i];
    return value;
  }
  const digits = text(block, offset, length).trim();
  if (digits === "") return 0;
  if (!/^[0-7]+$/.test(digits))
    throw new Error(`not an octal number in a tar header: ${JSON.stringify(digits)}`);
  return Number.parseInt(digits, 8);
}

/** Whether the block's checksum (its bytes summed, the checksum field as spaces) is right. */
function checksumHolds(block: Uint8Array): boolean {
  let sum = 0;
  for (let i = 0; i < BLOCK; i++) sum += i >= 148 && i < 156 ? 32 : block[i];
  return sum === numberField(block, 148, 8);
}

/** What a header block says; throws on a damaged one. A block of zeros ends the archive. */
export function parseHeader(block: Uint8Array): HeaderBlock {
  if (block.every((byte) => byte === 0)) return { kind: "end" };
  if (!checksumHolds(block)) throw new Error("a tar header's checksum is wrong (a damaged archive)");
  const flag = String.fromCharCode(block[156] || 48);
  const size = numberField(block, 124, 12);
  if (flag === "x") return { kind: "pax", size };
  if (flag === "g") return { kind: "pax-global", size };
  if (flag === "L") return { kind: "long-name", size };
  if (flag === "K") return { kind: "long-link", size };
  const name = text(block, 0, 100);
  const ustar = text(block, 257, 6).startsWith("ustar");
  const prefix = ustar ? text(block, 345, 155) : "";
  const type =
    flag === "0" || flag === "7"
      ? "file"
      : flag === "5"
        ? "directory"
        : flag === "2"
          ? "symlink"
          : flag === "1"
            ? "hardlink"
            : "other";
  return {
    kind: "entry",
    entry: {
      path: prefix ? `${prefix}/${name}` : name,
      type,
      flag,
      size: type === "file" || type === "other" ? size : 0,
      mode: numberField(block, 100, 8) & 0o7777,
      uid: numberField(block, 108, 8),
      gid: numberField(block, 116, 8),
      mtime: numberField(block, 136, 12),
      linkpath: text(block, 157, 100),
    },
  };
}

/** A pax extended header's records (`LEN key=value\n`), by key. */
export function parsePax(data: Uint8Array): Map<string, string> {
  const records = new Map<string, string>();
  const buffer = Buffer.from(data);
  let offset = 0;
  while (offset < buffer.length) {
    const space = buffer.indexOf(32, offset);
    if (space < 0) break;
    const length = Number.parseInt(buffer.subarray(offset, space).toString("ascii"), 10);
    if (!Number.isInteger(length) || length <= 0 || offset + length > buffer.length)
      throw new Error("a pax header record is damaged");
    const record = buffer.subarray(space + 1, offset + length - 1).toString("utf8");
    const equals = record.indexOf("=");
    if (equals > 0) records.set(record.slice(0, equals), record.slice(equals + 1));
    offset += length;
  }
  return records;
}

/** The entry with what a pax record or GNU long name said of it put over its header's fields. */
export function withOverrides(
  entry: TarEntry,
  pax: ReadonlyMap<string, string>,
  longName: string | null,
  longLink: string | null,
): TarEntry {
  const number = (key: string, fallback: number) => {
    const value = pax.get(key);
    return value === undefined ? fallback : Number(value);
  };
  const size = number("size", entry.size);
  return {
    ...entry,
    path: pax.get("path") ?? longName ?? entry.path,
    linkpath: pax.get("linkpath") ?? longLink ?? entry.linkpath,
    size: entry.type === "file" || entry.type === "other" ? size : 0,
    uid: number("uid", entry.uid),
    gid: number("gid", entry.gid),
    mtime: Math.floor(number("mtime", entry.mtime)),
  };
}

/** Blocks a member's data takes (its size rounded up to whole blocks). */
export function paddedSize(size: number): number {
  return Math.ceil(size / BLOCK) * BLOCK;
}

// Reads a tar archive as it streams in (an image layer through gunzip, an oci-archive file) and
// hands each member to a visitor: its entry, then its data in pieces, then its end. Nothing is
// written by the reader itself (layer-apply.ts writes, refusing what would leave the image).

import { BLOCK, paddedSize, parseHeader, parsePax, type TarEntry, withOverrides } from "./tar-headers.ts";

export interface TarVisitor {
  /** A member starts (its data follows through `data`, then `end`). */
  entry(entry: TarEntry): void;
  data(chunk: Uint8Array): void;
  end(): void;
}

/** Reads the whole archive; throws on a damaged or cut one. */
export async function readTar(source: AsyncIterable<Uint8Array>, visitor: TarVisitor): Promise<void> {
  let pending = Buffer.alloc(0);
  /** What the bytes are now: a header, a record for the next entry, or a member's data. */
  let state:
    | { kind: "header" }
    | { kind: "record"; of: string; size: number }
    | { kind: "data"; left: number; pad: number } = {
    kind: "header",
  };
  let pax = new Map<string, string>();
  let longName: string | null = null;
  let longLink: string | null = null;
  let ended = false;

  for await (const chunk of source) {
    if (ended) continue;
    pending = pending.length === 0 ? Buffer.from(chunk) : Buffer.concat([pending, chunk]);
    for (;;) {
      if (state.kind === "data") {
        if (state.left > 0) {
          if (pending.length === 0) break;
          const piece = pending.subarray(0, Math.min(state.left, pending.length));
          visitor.data(piece);
          state.left -= piece.length;
          pending = pending.subarray(piece.length);
          if (state.left > 0) break;
        }
        if (pending.length < state.pad) break;
        pending = pending.subarray(state.pad);
        visitor.end();
        state = { kind: "header" };
        continue;
      }
      if (state.kind === "record") {
        const whole = paddedSize(state.size);
        if (pending.length < whole) break;
        const data = pending.subarray(0, state.size);
        if (state.of === "pax") pax = parsePax(data);
        else if (state.of === "long-name") longName = Buffer.from(data).toString("utf8").replace(/\0+$/, "");
        else if (state.of === "long-link") longLink = Buffer.from(data).toString("utf8").replace(/\0+$/, "");
        pending = pending.subarray(whole);
        state = { kind: "header" };
        continue;
      }
      if (pending.length < BLOCK) break;
      const header = parseHeader(pending.subarray(0, BLOCK));
      pending = pending.subarray(BLOCK);
      if (header.kind === "end") {
        ended = true;
        break;
      }
      if (header.kind !== "entry") {
        state = { kind: "record", of: header.kind, size: header.size };
        continue;
      }
      const entry = withOverrides(header.entry, pax, longName, longLink);
      pax = new Map();
      longName = null;
      longLink = null;
      visitor.entry(entry);
      state = { kind: "data", left: entry.size, pad: paddedSize(entry.size) - entry.size };
    }
  }
  if (!ended && (state.kind !== "header" || pending.length > 0))
    throw new Error("the tar archive is cut short");
}

// What a path in an image layer means (the OCI image spec's layer changesets): a file to put in
// place, a whiteout `.wh.NAME` (NAME of the lower layers is gone), or an opaque marker
// `.wh..wh..opq` (the folder's contents from the lower layers are gone). Paths are taken relative
// to the image's root, and one that leaves it (`..`) is refused. Pure.

import { posix } from "node:path";

export const WHITEOUT_PREFIX = ".wh.";
export const OPAQUE_MARKER = ".wh..wh..opq";

export type LayerPath =
  /** A member to put at `path` (relative to the root; "" is the root itself). */
  | { kind: "plain"; path: string }
  /** `path` of the lower layers is removed. */
  | { kind: "whiteout"; path: string }
  /** The contents of folder `path` from the lower layers are removed. */
  | { kind: "opaque"; path: string }
  | { kind: "refused"; reason: string };

/** A member's name as a path relative to the image's root ("" the root), or null when it leaves it. */
export function rootRelative(name: string): string | null {
  if (name.includes("\0")) return null;
  const relative = name.replace(/^\/+/, "");
  if (relative === "" || relative === "." || relative === "./") return "";
  const normal = posix.normalize(relative).replace(/\/+$/, "");
  if (normal === ".." || normal.startsWith("../")) return null;
  return normal === "." ? "" : normal;
}

/** What a layer member named `name` means. */
export function layerPath(name: string): LayerPath {
  const path = rootRelative(name);
  if (path === null) return { kind: "refused", reason: `${JSON.stringify(name)} leaves the image's root` };
  const base = posix.basename(path);
  const dir = posix.dirname(path) === "." ? "" : posix.dirname(path);
  if (base === OPAQUE_MARKER) return { kind: "opaque", path: dir };
  if (base.startsWith(WHITEOUT_PREFIX)) {
    const target = base.slice(WHITEOUT_PREFIX.length);
    if (target === "" || target === "." || target === "..")
      return { kind: "refused", reason: `${JSON.stringify(name)} is not a whiteout of a name` };
    return { kind: "whiteout", path: dir === "" ? target : `${dir}/${target}` };
  }
  return { kind: "plain", path };
}

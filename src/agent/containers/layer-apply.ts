// Applies one image layer (a tar stream) over a root folder, as the OCI image spec says: whiteouts
// remove what lower layers put, an opaque marker empties a folder of them, members are put in
// place with their owner, mode and time. Runs as root on what the job's image holds, so nothing
// is written or removed outside the root: a member whose folder is a symbolic link (one of a lower
// layer or of this one) is refused, never followed, and so is a hard link to such a place.
// Devices and FIFOs are passed over (the runtime makes /dev).

import {
  chmodSync,
  closeSync,
  constants,
  fchmodSync,
  fchownSync,
  futimesSync,
  lchownSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  rmSync,
  symlinkSync,
  utimesSync,
  writeSync,
} from "node:fs";
import { join, posix } from "node:path";
import type { TarEntry } from "./tar-headers.ts";
import { readTar } from "./tar-reader.ts";
import { layerPath, rootRelative } from "./whiteouts.ts";

const NEW_FILE = constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW;

/** Applies the layer read from `tar` (uncompressed) over `root`; throws naming the member it refused. */
export async function applyLayer(root: string, tar: AsyncIterable<Uint8Array>): Promise<void> {
  /** Paths this layer put: its own whiteouts and opaque markers concern only the lower layers. */
  const written = new Set<string>();
  /** Folders' modes, set once the layer is in (a read-only folder would refuse its members). */
  const folderModes: [string, TarEntry][] = [];
  let open: { fd: number; entry: TarEntry } | null = null;

  await readTar(tar, {
    entry(entry) {
      const meaning = layerPath(entry.path);
      if (meaning.kind === "refused") throw new Error(`layer member ${meaning.reason}`);
      if (meaning.kind === "whiteout") {
        if (!written.has(meaning.path)) removeInside(root, meaning.path);
        return;
      }
      if (meaning.kind === "opaque") {
        emptyFolder(root, meaning.path, written);
        return;
      }
      const path = meaning.path;
      if (path === "") return;
      ensureFolders(root, posix.dirname(path));
      const target = join(root, path);
      const existing = lstatSync(target, { throwIfNoEntry: false });
      written.add(path);
      if (entry.type === "directory") {
        if (!existing?.isDirectory()) {
          if (existing) rmSync(target, { recursive: true, force: true });
          makeFolder(target);
        }
        lchownSync(target, entry.uid, entry.gid);
        folderModes.push([target, entry]);
        return;
      }
      if (existing) rmSync(target, { recursive: true, force: true });
      if (entry.type === "file") {
        open = { fd: openSync(target, NEW_FILE, 0o600), entry };
      } else if (entry.type === "symlink") {
        symlinkSync(entry.linkpath, target);
        lchownSync(target, entry.uid, entry.gid);
      } else if (entry.type === "hardlink") {
        const source = rootRelative(entry.linkpath);
        if (source === null || source === "")
          throw new Error(
            `layer member ${JSON.stringify(entry.path)} links to ${JSON.stringify(entry.linkpath)}, outside the image`,
          );
        ensureFolders(root, posix.dirname(source), false);
        const found = lstatSync(join(root, source), { throwIfNoEntry: false });
        if (!found || found.isDirectory() || found.isSymbolicLink())
          throw new Error(
            `layer member ${JSON.stringify(entry.path)} links to ${JSON.stringify(entry.linkpath)}, not a file of the image`,
          );
        linkSync(join(root, source), target);
      } else written.delete(path);
    },
    data(chunk) {
      if (open) writeSync(open.fd, chunk);
    },
    end() {
      if (!open) return;
      const { fd, entry } = open;
      open = null;
      try {
        fchownSync(fd, entry.uid, entry.gid);
        // After the owner: chown clears set-user-ID and set-group-ID bits.
        fchmodSync(fd, entry.mode);
        futimesSync(fd, entry.mtime, entry.mtime);
      } finally {
        closeSync(fd);
      }
    },
  });
  for (const [target, entry] of folderModes.reverse()) {
    chmodSync(target, entry.mode);
    utimesSync(target, entry.mtime, entry.mtime);
  }
}

/** A folder of the image: 0755 whatever the agent's umask (077), until a layer says otherwise. */
function makeFolder(path: string): void {
  mkdirSync(path);
  chmodSync(path, 0o755);
}

/**
 * Makes the folders of `folder` (relative to root) that are missing, and refuses one that is a
 * symbolic link or not a folder: a member is never written through a link.
 */
function ensureFolders(root: string, folder: string, make = true): void {
  if (folder === "." || folder === "") return;
  let path = root;
  for (const part of folder.split("/")) {
    path = join(path, part);
    const found = lstatSync(path, { throwIfNoEntry: false });
    if (!found) {
      if (!make) throw new Error(`${folder} is not in the image`);
      makeFolder(path);
    } else if (found.isSymbolicLink())
      throw new Error(
        `a layer writes under ${path.slice(root.length + 1)}, a symbolic link (not supported: it could leave the image)`,
      );
    else if (!found.isDirectory())
      throw new Error(`a layer writes under ${path.slice(root.length + 1)}, which is not a folder`);
  }
}

/** Removes `path` (relative to root) of a lower layer, if there, never through a link. */
function removeInside(root: string, path: string): void {
  const folder = posix.dirname(path);
  try {
    ensureFolders(root, folder, false);
  } catch {
    return;
  }
  rmSync(join(root, path), { recursive: true, force: true });
}

/** Removes what lower layers put in folder `path` (relative to root), keeping what this layer put. */
function emptyFolder(root: string, path: string, written: ReadonlySet<string>): void {
  ensureFolders(root, path);
  for (const name of readdirSync(join(root, path))) {
    const child = path === "" ? name : `${path}/${name}`;
    if (!written.has(child)) rmSync(join(root, child), { recursive: true, force: true });
  }
}

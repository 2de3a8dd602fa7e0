// A folder the agent writes new files into, by relative paths, without ever following a link: where
// a checkpoint is restored. On a run-as host the agent is root, and a link met on the way (one a
// job left, or planted in a folder the job's account could reach) would make it write a file of
// root's wherever the link points. So the folder is held open, and each component of a path is
// made and opened from the handle of the one above it (through /proc/self/fd: Node has no
// openat), with O_NOFOLLOW: a link in the way is refused, not followed, and renaming a folder
// above meanwhile changes nothing. Files are made with O_EXCL: never one that is already there
// (nor a link, dangling or not, in its place).

import { constants } from "node:fs";
import { type FileHandle, lstat, mkdir, open } from "node:fs/promises";

const { O_RDONLY, O_WRONLY, O_CREAT, O_EXCL, O_DIRECTORY, O_NOFOLLOW } = constants;

/** A path of the folder that cannot be written as asked: a link, or a file where a folder goes. */
export class NoFollowError extends Error {}

/** `name` in the folder open as `folder`, whatever the folder's path is now. */
function at(folder: FileHandle, name: string): string {
  return `/proc/self/fd/${folder.fd}/${name}`;
}

function codeOf(error: unknown): string | undefined {
  return (error as NodeJS.ErrnoException).code;
}

export class NoFollowFolder {
  readonly #root: FileHandle;
  /** The folders open below the root, by name from the root down: a run of paths in one folder opens it once. */
  #open: { name: string; handle: FileHandle }[] = [];

  private constructor(root: FileHandle) {
    this.#root = root;
  }

  /** Opens `dir`, which must be a folder and not a link. */
  static async open(dir: string): Promise<NoFollowFolder> {
    return new NoFollowFolder(await open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW));
  }

  /**
   * Makes a new file at `path` (relative, `/`-separated, checked beforehand: no `.`, `..` or empty
   * component), and the folders above it that are not there. Throws NoFollowError, naming the
   * path, when a component is a link or not a folder, or the file is already there.
   */
  async createFile(path: string, mode = 0o666): Promise<FileHandle> {
    const names = path.split("/");
    const file = names.pop() as string;
    const folder = await this.#folder(path, names);
    try {
      return await open(at(folder, file), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, mode);
    } catch (error) {
      if (codeOf(error) !== "EEXIST") throw error;
      throw new NoFollowError(await this.#refusal(path, at(folder, file), file, "a file"));
    }
  }

  /** The handle of the folder `names` below the root, made where it is not there. */
  async #folder(path: string, names: string[]): Promise<FileHandle> {
    let depth = 0;
    while (depth < names.length && depth < this.#open.length && this.#open[depth].name === names[depth])
      depth++;
    for (const left of this.#open.splice(depth)) await left.handle.close();
    let folder = depth === 0 ? this.#root : this.#open[depth - 1].handle;
    for (const name of names.slice(depth)) {
      const next = at(folder, name);
      // mkdir never follows a link in the last component: a link there is EEXIST, and refused below.
      await mkdir(next, 0o777).catch((error: unknown) => {
        if (codeOf(error) !== "EEXIST") throw error;
      });
      try {
        folder = await open(next, O_RDONLY | O_DIRECTORY | O_NOFOLLOW);
      } catch (error) {
        if (codeOf(error) !== "ELOOP" && codeOf(error) !== "ENOTDIR") throw error;
        throw new NoFollowError(await this.#refusal(path, next, name, "a folder"));
      }
      this.#open.push({ name, handle: folder });
    }
    return folder;
  }

  /** Why `name` (at `where`) could not be made `wanted` on the way to `path`. */
  async #refusal(path: string, where: string, name: string, wanted: string): Promise<string> {
    const info = await lstat(where).catch(() => null);
    const found = info?.isSymbolicLink()
      ? "is a link: not followed"
      : info?.isDirectory()
        ? "is already there, a folder"
        : "is already there";
    return `${JSON.stringify(path)}: ${JSON.stringify(name)} ${found} (${wanted} goes there)`;
  }

  async close(): Promise<void> {
    for (const { handle } of this.#open.splice(0)) await handle.close();
    await this.#root.close();
  }
}

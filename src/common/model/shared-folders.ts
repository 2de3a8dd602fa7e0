// Folders hosts share (an agent's `--shared PATH`, the host fact `host.shared`) and a job's working
// folder on one of them (the job file's `workdir`: the job runs in place, docs/data.md). Both are
// absolute paths without `..`; a folder holds a path when the path is that folder or lies inside it,
// part by part (`/data` holds `/data/run1`, not `/data2`). What the job file, the agent's flag and
// the scheduler's feasibility share.

import { posix } from "node:path";

/** Characters a shared folder or a working folder may have (Linux's PATH_MAX). */
export const MAX_FOLDER_PATH_CHARS = 4096;

/**
 * What is wrong with a path given as an absolute folder (a `workdir`, a `--shared` folder), or
 * null: it must start with `/`, name no `..` (it would leave the folder it seems to be in) and hold
 * no NUL byte (it reaches exec(2) and chdir(2) as a C string).
 */
export function absoluteFolderProblem(path: string): string | null {
  if (path.includes("\0")) return "must not contain a NUL byte";
  if (!path.startsWith("/")) return "must be an absolute path (starting with /)";
  if (path.split("/").includes("..")) return "must not contain .. (name the folder itself)";
  if (path.length > MAX_FOLDER_PATH_CHARS) return `must be at most ${MAX_FOLDER_PATH_CHARS} characters`;
  return null;
}

/** A folder path without repeated slashes, `.` parts or trailing slash (`/data//x/./`: `/data/x`). */
export function normalFolder(path: string): string {
  const normal = posix.normalize(path);
  return normal.length > 1 && normal.endsWith("/") ? normal.slice(0, -1) : normal;
}

/** Whether `folder` holds `path`: the same folder, or one inside it (`/` holds every path). */
export function folderHolds(folder: string, path: string): boolean {
  const outer = normalFolder(folder);
  const inner = normalFolder(path);
  return outer === "/" || inner === outer || inner.startsWith(`${outer}/`);
}

/** The first of the `shared` folders that holds `workdir`, or undefined when none does. */
export function sharingFolder(workdir: string, shared: readonly string[] | undefined): string | undefined {
  return shared?.find((folder) => folderHolds(folder, workdir));
}

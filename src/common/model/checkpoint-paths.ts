// The paths of a checkpoint manifest. When a task restarts, the agent writes each one into the new
// attempt's checkpoint folder, as root on a run-as host, before the job's account gets the folder:
// a path that climbed out (`../../etc/cron.d/x`) would be a file of root's anywhere. So the server
// checks them when a manifest is committed, and the agent again before it writes a byte. The rules
// are those of job inputs and outputs (relative-path.ts), made strict where the agent, which named
// the files itself from what it found in the folder, never differs: the normal form only (no `.`,
// no empty or trailing component), each name and the whole path no longer than Linux takes, each
// path once, and none both a file and the folder of another.

import { posix } from "node:path";
import { relativePathProblem } from "./relative-path.ts";

/** The longest file name Linux file systems take (NAME_MAX), in bytes. */
export const CHECKPOINT_NAME_MAX_BYTES = 255;

/** The longest path Linux takes (PATH_MAX less its NUL), in bytes. */
export const CHECKPOINT_PATH_MAX_BYTES = 4095;

/** Why one checkpoint path will not do, or null. */
export function checkpointPathProblem(path: string): string | null {
  const problem = relativePathProblem(path);
  if (problem) return problem;
  if (path !== posix.normalize(path) || path.endsWith("/"))
    return "is not in normal form (a `.`, an empty or a trailing component)";
  if (Buffer.byteLength(path) > CHECKPOINT_PATH_MAX_BYTES)
    return `is longer than ${CHECKPOINT_PATH_MAX_BYTES} bytes`;
  if (path.split("/").some((name) => Buffer.byteLength(name) > CHECKPOINT_NAME_MAX_BYTES))
    return `has a name longer than ${CHECKPOINT_NAME_MAX_BYTES} bytes`;
  return null;
}

export interface CheckpointPathIssue {
  /** The index of the file in the manifest. */
  index: number;
  message: string;
}

/** What is wrong with a manifest's paths, each naming its path (empty when nothing is). */
export function checkpointPathIssues(paths: readonly string[]): CheckpointPathIssue[] {
  const issues: CheckpointPathIssue[] = [];
  const files = new Set<string>();
  const folders = new Set<string>();
  paths.forEach((path, index) => {
    const named = JSON.stringify(path);
    const problem = checkpointPathProblem(path);
    if (problem) {
      issues.push({ index, message: `${named} ${problem}` });
      return;
    }
    if (files.has(path)) {
      issues.push({ index, message: `${named} is named twice` });
      return;
    }
    // A file and a folder of the same name cannot both be restored (nor be in one folder).
    const above = ancestors(path);
    const clash = folders.has(path) ? path : above.find((folder) => files.has(folder));
    if (clash !== undefined) {
      issues.push({ index, message: `${named} clashes with ${JSON.stringify(clash)}: a file and a folder` });
      return;
    }
    files.add(path);
    for (const folder of above) folders.add(folder);
  });
  return issues;
}

/** "a/b/c" -> ["a", "a/b"]. */
function ancestors(path: string): string[] {
  const names = path.split("/");
  return names.slice(1).map((_, end) => names.slice(0, end + 1).join("/"));
}

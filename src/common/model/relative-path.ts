// A path relative to a folder it must stay in: the rule for job inputs and outputs (job-spec.ts) and
// for checkpoint files (checkpoint-paths.ts). A module of its own so that the agent, which checks
// checkpoint paths too, does not load the job file's schema and CEL with it.

import { posix } from "node:path";

/** Relative, normalised, and not leaving its folder. */
export function relativePathProblem(path: string): string | null {
  if (path.length === 0) return "must not be empty";
  if (path.includes("\0")) return "must not contain NUL";
  if (path.startsWith("/") || /^[A-Za-z]:[\\/]/.test(path)) return "must be a relative path";
  const normal = posix.normalize(path.replaceAll("\\", "/"));
  if (normal.startsWith("/")) return "must be a relative path";
  if (normal === ".." || normal.startsWith("../")) return "leaves its folder";
  if (normal === ".") return "must name a file";
  return null;
}

// Where the agent's attempts' cgroups are (one base directory per hierarchy in v1, one in v2) and
// the directories of one cgroup under it: what an attempt's cgroup (attempt-cgroup.ts) and the spare
// ones kept for reuse (spare-cgroups.ts) both name their directories by.

import type { CgroupLayout, V1Controller } from "./cgroup-layout.ts";

/** Where the agent's attempts' cgroups are: one base directory per hierarchy (v1) or one (v2). */
export type CgroupBase =
  | { version: 2; dir: string }
  | { version: 1; dirs: Partial<Record<V1Controller, string>> & Record<"memory" | "cpu" | "pids", string> };

export function baseUnder(layout: CgroupLayout, name: string): CgroupBase {
  if (layout.version === 2) return { version: 2, dir: `${layout.dir}/${name}` };
  const dirs: Partial<Record<V1Controller, string>> = {};
  for (const [controller, dir] of Object.entries(layout.dirs) as [V1Controller, string][])
    dirs[controller] = `${dir}/${name}`;
  return { version: 1, dirs: dirs as Extract<CgroupBase, { version: 1 }>["dirs"] };
}

/** The directory of cgroup `name` for a controller (v2: the one directory); null where v1 does not mount it. */
export function cgroupDirFor(base: CgroupBase, name: string, controller: V1Controller): string | null {
  if (base.version === 2) return `${base.dir}/${name}`;
  const dir = base.dirs[controller];
  return dir === undefined ? null : `${dir}/${name}`;
}

/** Every directory of cgroup `name`, each once (v1 hierarchies may be mounted together). */
export function cgroupDirs(base: CgroupBase, name: string): string[] {
  if (base.version === 2) return [`${base.dir}/${name}`];
  return [...new Set(Object.values(base.dirs).map((dir) => `${dir}/${name}`))];
}

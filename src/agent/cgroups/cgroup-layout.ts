// Which cgroups the agent can put its attempts in, read from /proc/self/mountinfo and
// /proc/self/cgroup (pure: the texts are passed in). cgroup v2 when the unified tree offers the
// memory, cpu and pids controllers below the agent's own cgroup (a delegated subtree, or the whole
// tree for root); else cgroup v1, when a hierarchy is mounted for each of them (cpuacct, freezer
// and devices are found too where mounted; which of them an attempt uses, enforcement.ts chooses).
// One or the other, never a mix: an attempt's limits and its accounting then come from one place.

/** The controllers without which nothing is enforced. */
export const REQUIRED_CONTROLLERS = ["memory", "cpu", "pids"] as const;

/** The v1 hierarchies an attempt is put in (the first three required, the others where mounted). */
export const V1_CONTROLLERS = ["memory", "cpu", "pids", "cpuacct", "freezer", "devices"] as const;
export type V1Controller = (typeof V1_CONTROLLERS)[number];

export type CgroupLayout =
  /** The agent's own cgroup directory in the unified tree. */
  | { version: 2; dir: string }
  /** The agent's own directory in each v1 hierarchy it uses. */
  | {
      version: 1;
      dirs: Partial<Record<V1Controller, string>> & Record<(typeof REQUIRED_CONTROLLERS)[number], string>;
    };

export interface Mount {
  root: string;
  mountPoint: string;
  version: 1 | 2;
  /** v1: the hierarchy's controllers (from its super options). */
  controllers: string[];
}

/** Octal escapes of mountinfo (\040 for a space) undone. */
function unescapeMountField(field: string): string {
  return field.replace(/\\([0-7]{3})/g, (_, octal: string) => String.fromCharCode(Number.parseInt(octal, 8)));
}

/** The cgroup mounts of a mountinfo text. */
export function cgroupMounts(mountinfo: string): Mount[] {
  const mounts: Mount[] = [];
  for (const line of mountinfo.split("\n")) {
    const separator = line.indexOf(" - ");
    if (separator < 0) continue;
    const before = line.slice(0, separator).split(" ");
    const after = line.slice(separator + 3).split(" ");
    const type = after[0];
    if (type !== "cgroup" && type !== "cgroup2") continue;
    mounts.push({
      root: unescapeMountField(before[3] ?? "/"),
      mountPoint: unescapeMountField(before[4] ?? ""),
      version: type === "cgroup2" ? 2 : 1,
      controllers:
        type === "cgroup" ? (after[2] ?? "").split(",").filter((o) => o !== "rw" && o !== "ro") : [],
    });
  }
  return mounts;
}

/** /proc/self/cgroup: each hierarchy's controllers ("" for v2) to the process's path in it. */
export function ownCgroups(text: string): Map<string, string> {
  const paths = new Map<string, string>();
  for (const line of text.split("\n")) {
    const match = /^(\d+):([^:]*):(.*)$/.exec(line.trim());
    if (match) paths.set(match[2], match[3]);
  }
  return paths;
}

/** The directory of cgroup `path` in a hierarchy mounted from `root`; null when the mount does not show it. */
export function directoryOf(mount: Mount, path: string): string | null {
  const root = mount.root === "/" ? "" : mount.root.replace(/\/+$/, "");
  if (root !== "" && path !== root && !path.startsWith(`${root}/`)) return null;
  const rest = path.slice(root.length).replace(/^\/+/, "");
  return rest === "" ? mount.mountPoint : `${mount.mountPoint}/${rest}`;
}

/**
 * Where attempts can go, or why they cannot. `v2Controllers` is the text of cgroup.controllers in
 * the agent's own unified cgroup (null when there is none or it could not be read).
 */
export function cgroupLayout(
  mountinfo: string,
  selfCgroup: string,
  v2Controllers: string | null,
): { layout: CgroupLayout } | { unavailable: string } {
  const mounts = cgroupMounts(mountinfo);
  const own = ownCgroups(selfCgroup);
  const unified = mounts.find((mount) => mount.version === 2);
  const unifiedPath = own.get("");
  const offered = new Set((v2Controllers ?? "").trim().split(/\s+/).filter(Boolean));
  if (unified && unifiedPath !== undefined && REQUIRED_CONTROLLERS.every((c) => offered.has(c))) {
    const dir = directoryOf(unified, unifiedPath);
    if (dir !== null) return { layout: { version: 2, dir } };
  }
  const dirs: Partial<Record<V1Controller, string>> = {};
  for (const mount of mounts) {
    if (mount.version !== 1) continue;
    for (const [hierarchy, path] of own) {
      if (hierarchy === "" || hierarchy.startsWith("name=")) continue;
      const names = hierarchy.split(",");
      if (!names.every((name) => mount.controllers.includes(name))) continue;
      const dir = directoryOf(mount, path);
      if (dir === null) continue;
      for (const name of names) {
        const controller = V1_CONTROLLERS.find((known) => known === name);
        if (controller) dirs[controller] ??= dir;
      }
    }
  }
  const missing = REQUIRED_CONTROLLERS.filter((controller) => dirs[controller] === undefined);
  if (missing.length === 0)
    return { layout: { version: 1, dirs: dirs as Extract<CgroupLayout, { version: 1 }>["dirs"] } };
  const v2Note = unified
    ? `the unified (v2) tree offers ${offered.size ? [...offered].sort().join(", ") : "no controllers"}`
    : "no unified (v2) tree is mounted";
  return {
    unavailable: `no cgroup controllers for ${missing.join(", ")}: ${v2Note}, and no v1 hierarchy has ${missing.join(", ")}`,
  };
}

// The OCI runtime the agent runs containers with (docs/containers.md): `runc`, found on PATH or
// named by `--container-runtime PATH`, asked its version once at start. What it finds is the host
// fact `containers`; what it does not, `containersUnavailable`, a sentence the scheduler's explain
// shows. A host without one never runs a job's container outside its image.

import { spawnSync } from "node:child_process";
import { accessSync, constants } from "node:fs";
import { delimiter, join } from "node:path";

/** The runtime found: its kind, its path, its version line. */
export interface ContainerRuntime {
  runtime: string;
  path: string;
  version: string;
}

export type RuntimeChoice = { found: ContainerRuntime } | { unavailable: string };

/** Where runc is looked for when no path is given: PATH, then Debian's place for it. */
const DEFAULT_PLACES = ["/usr/sbin", "/usr/local/sbin", "/sbin"];

/** The version `runc --version` prints on its first line (`runc version 1.1.5+ds1`), or null. */
export function runcVersion(output: string): string | null {
  const match = /^runc version (\S+)/m.exec(output);
  return match ? match[1] : null;
}

/**
 * The runtime to use: `path` (--container-runtime) or runc found on PATH. It must run and say it
 * is runc; the agent must be root (runc's rootless mode is not done yet: docs/containers.md).
 */
export function findContainerRuntime(
  path: string | undefined,
  env: NodeJS.ProcessEnv = process.env,
  uid: number = process.geteuid?.() ?? 0,
): RuntimeChoice {
  const program = path ?? onPath("runc", env.PATH ?? "");
  if (program === null)
    return { unavailable: "runc not found on PATH (install runc, or give --container-runtime PATH)" };
  const result = spawnSync(program, ["--version"], { encoding: "utf8", timeout: 10_000 });
  if (result.error) return { unavailable: `${program} does not run: ${result.error.message}` };
  const version = runcVersion(result.stdout ?? "");
  if (result.status !== 0 || version === null)
    return { unavailable: `${program} --version did not say runc's version (only runc is supported yet)` };
  if (uid !== 0)
    return {
      unavailable: `runc ${version} needs the agent to run as root (rootless containers are not done yet)`,
    };
  return { found: { runtime: "runc", path: program, version } };
}

function onPath(name: string, pathList: string): string | null {
  for (const folder of [...pathList.split(delimiter).filter(Boolean), ...DEFAULT_PLACES]) {
    const candidate = join(folder, name);
    try {
      accessSync(candidate, constants.X_OK);
      return candidate;
    } catch {}
  }
  return null;
}

// Whether any host shares the folder a job runs in (its `workdir`, docs/data.md), over every host
// the server knows, connected or not (the folders their agents last declared), and the folders
// pools' pilots will share (the pools file's `shared`). When hosts share
// folders and none of them holds the workdir, a submit is refused: most likely a mistyped path, and
// said at once rather than found out by a job that never starts. While no host shares any folder,
// a job with a workdir waits (the hosts that will share it have not joined yet), and explain says
// so. Which hosts may run it is feasibility's (stages/feasibility.ts, `sharesWorkdir`). Pure.

import type { HostFacts } from "../../common/model/host-facts.ts";
import { sharingFolder } from "../../common/model/shared-folders.ts";
import type { Refusal } from "./quotas.ts";

/**
 * The folders the hosts share, each once, in the order first met; then those of `pools` (the
 * pools file's `shared`: its pilots will share them, whether any has joined yet or not).
 */
export function declaredFolders(
  hosts: Iterable<{ facts: HostFacts }>,
  pools: readonly string[] = [],
): string[] {
  const folders = new Set<string>();
  for (const host of hosts) for (const folder of host.facts.shared ?? []) folders.add(folder);
  for (const folder of pools) folders.add(folder);
  return [...folders];
}

/** How the shared folders read in a sentence: the first few, and how many more. */
function listed(folders: readonly string[]): string {
  const shown = folders.slice(0, 5).join(", ");
  return folders.length > 5 ? `${shown} and ${folders.length - 5} more` : shown;
}

/**
 * A submit's refusal when hosts share folders (`declared`) and none holds the job's workdir; null
 * when the job has none, a shared folder holds it, or no host shares any folder yet (it then waits).
 */
export function workdirRefusal(workdir: string | undefined, declared: readonly string[]): Refusal | null {
  if (workdir === undefined || declared.length === 0) return null;
  if (sharingFolder(workdir, declared) !== undefined) return null;
  return {
    status: 400,
    field: "workdir",
    message: `${workdir} is in no folder the hosts share (they share ${listed(declared)}): a job runs in place only in a shared folder`,
  };
}

/**
 * Why a job with a workdir waits before any host is looked at (explain's job-level reason): no host
 * shares a folder that holds it; null when one does, or the job has no workdir.
 */
export function workdirWaitReason(workdir: string | undefined, declared: readonly string[]): string | null {
  if (workdir === undefined || sharingFolder(workdir, declared) !== undefined) return null;
  const shared =
    declared.length === 0 ? "no host shares a folder" : `the hosts share only ${listed(declared)}`;
  return `its workdir ${workdir} is in no folder a host shares (${shared}): it waits for a host that shares one holding it (an agent's --shared)`;
}

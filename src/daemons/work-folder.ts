// Where `steward agent` keeps its work folder when given no --work: a folder of its account's, not
// the shared /tmp (where another account could make the folder first, and swap the job.sh root
// runs). Root's agent keeps it in /var/lib/steward/agent/NAME, any other account's in
// $XDG_STATE_HOME/steward/agent/NAME (~/.local/state when unset, as the XDG base directories
// say). NAME is the host's name: two agents of one host with their own --name never share a folder.
// (`steward up` keeps its agents' under its data folder: DATA/agents/local-N.)

import { chmodSync, mkdirSync } from "node:fs";
import { dirname, isAbsolute, join } from "node:path";

/** Root's state folder of Steward's; its agents' work folders are in agent/ below it. */
export const ROOT_STATE_FOLDER = "/var/lib/steward";

/** The default work folder of the agent named `name`, for the account `uid` with `env` and `home`. */
export function defaultWorkFolder(
  name: string,
  account: { uid: number; env: NodeJS.ProcessEnv; home: string },
): string {
  // A name is one path component here: `--name ../x` does not climb out.
  const safe = name.replace(/[^\w.@-]/g, "_");
  const component = /^\.*$/.test(safe) ? safe.replaceAll(".", "_") || "_" : safe;
  if (account.uid === 0) return join(ROOT_STATE_FOLDER, "agent", component);
  const xdg = account.env.XDG_STATE_HOME;
  // The specification: a relative path there is invalid, and is ignored.
  const state = xdg && isAbsolute(xdg) ? xdg : join(account.home, ".local", "state");
  return join(state, "steward", "agent", component);
}

/**
 * Makes /var/lib/steward and its agent/ for root's default work folder, passable by all (0711, not
 * listable): an agent that runs jobs as other accounts needs every folder above its work folder
 * passable (README "Jobs run as whom"). Folders that are there already are left as they are.
 */
export function makeRootStateFolders(): void {
  const agentFolder = join(ROOT_STATE_FOLDER, "agent");
  const first = mkdirSync(agentFolder, { recursive: true, mode: 0o711 });
  if (first === undefined) return;
  // The umask (077 in the daemons) took the bits for others off the new folders: they are set again.
  for (let path = agentFolder; ; path = dirname(path)) {
    chmodSync(path, 0o711);
    if (path === first) return;
  }
}

// The agents a test file started (`steward agent` processes, and `up`'s own agents), so that what
// those that were killed leave goes with the file (test/setup-files.ts): an agent killed with
// kill -9 and not crashed through its helper, or a `steward up` killed, leaves its cgroup base and
// its kept cgroups behind, and a test that forgets its agent's work folder leaves that in /tmp;
// the machine keeps both. Light on purpose: every test file loads it.

import type { ChildProcess } from "node:child_process";
import { rmSync } from "node:fs";

export interface StartedAgent {
  name: string;
  work: string;
  child: ChildProcess;
  /** The work folder was made for it by the helper (not one the test named): it goes too. */
  ownWork: boolean;
}

export const startedAgents: StartedAgent[] = [];

const ended = ({ child }: StartedAgent) => child.exitCode !== null || child.signalCode !== null;

/**
 * Removes the cgroups (and the helper-made work folders) of the agents started so far whose
 * process has ended; one whose work folder an agent still running uses is left to that one.
 */
export async function cleanUpEndedAgents(): Promise<void> {
  const started = startedAgents.splice(0);
  const inUse = new Set(started.filter((agent) => !ended(agent)).map((agent) => agent.work));
  const gone = started.filter((agent) => ended(agent) && !inUse.has(agent.work));
  if (gone.length === 0) return;
  const { removeAgentCgroups } = await import("./agent-cgroups.ts");
  for (const agent of gone) {
    await removeAgentCgroups(agent.name, agent.work);
    if (agent.ownWork) rmSync(agent.work, { recursive: true, force: true });
  }
}

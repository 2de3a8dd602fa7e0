// The agents a test file started (`steward agent` processes, and `up`'s own agents), so that the
// cgroups of those that were killed go with the file (test/setup-files.ts): an agent killed with
// kill -9 and not crashed through its helper, or a `steward up` killed, leaves its cgroup base and
// its kept cgroups behind, and the machine keeps them. Light on purpose: every test file loads it.

import type { ChildProcess } from "node:child_process";

export const startedAgents: { name: string; work: string; child: ChildProcess }[] = [];

/** Removes the cgroups of the agents started so far whose process has ended. */
export async function removeEndedAgentsCgroups(): Promise<void> {
  const ended = startedAgents
    .splice(0)
    .filter(({ child }) => child.exitCode !== null || child.signalCode !== null);
  if (ended.length === 0) return;
  const { removeAgentCgroups } = await import("./agent-cgroups.ts");
  for (const agent of ended) await removeAgentCgroups(agent.name, agent.work);
}

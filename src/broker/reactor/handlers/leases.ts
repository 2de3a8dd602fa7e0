// Leases: a host silent for the host timeout is lost, and its attempts with it (guarantee 3).

import type { Step } from "../step.ts";
import { endOnHost } from "./gangs.ts";

export function expireLeases(step: Step, hostTimeoutSeconds: number): void {
  const { state, now } = step;
  const timeoutMs = hostTimeoutSeconds * 1000;
  for (const host of state.hosts.values()) {
    if (host.record.state === "lost" || now - host.lastSeen <= timeoutMs) continue;
    step.write.setHostState(host, "lost");
    // A frozen or partitioned agent may still hold its socket open: close it, so that when it
    // comes back it says hello again and is told to kill the attempts that were replaced.
    step.effect({ kind: "disconnect", host: host.record.name });
    const seconds = (now - host.lastSeen) / 1000;
    for (const live of [...host.active.values()]) {
      endOnHost(step, live, host.record.name, {
        outcome: "lost",
        exitCode: null,
        reason: { kind: "host-silent", host: host.record.name, seconds },
        cause: "host",
      });
    }
  }
}

// "Why is this job not running?", host by host (HyperQueue's explain).

import { hostFeasibility } from "./feasibility.ts";
import { capacityShortfall } from "./fit.ts";
import type { HostView, JobView } from "./view.ts";

export interface HostExplanation {
  host: string;
  eligible: boolean;
  reason: string;
}

export function explainJob(
  job: Pick<JobView, "cpus" | "memoryMb" | "requirements">,
  hosts: readonly HostView[],
): HostExplanation[] {
  return hosts.map((host) => {
    const feasibility = hostFeasibility(job, host);
    if (!feasibility.ok) return { host: host.name, eligible: false, reason: feasibility.reason };
    const shortfall = capacityShortfall(job, host);
    if (shortfall) return { host: host.name, eligible: true, reason: `busy: ${shortfall}` };
    return {
      host: host.name,
      eligible: true,
      reason: "matches and has room: the job starts at the next pass",
    };
  });
}

// Feasibility: may this host run this job at all (before counting free capacity)?

import { evaluateRequirement } from "../model/cel.ts";
import type { HostView, JobView } from "./view.ts";

export type Feasibility = { ok: true } | { ok: false; reason: string };

export function hostFeasibility(
  job: Pick<JobView, "cpus" | "memoryMb" | "requirements">,
  host: HostView,
): Feasibility {
  if (host.state !== "ready") return { ok: false, reason: `host is ${host.state}` };
  if (!host.connected) return { ok: false, reason: "host agent is not connected" };
  if (job.cpus > host.slots)
    return { ok: false, reason: `job needs ${job.cpus} cpus, host has ${host.slots} slots` };
  if (job.memoryMb > host.facts.memoryMb) {
    return { ok: false, reason: `job needs ${job.memoryMb} MB, host has ${host.facts.memoryMb} MB` };
  }
  if (job.requirements) {
    const result = evaluateRequirement(job.requirements, host.facts);
    if (!result.ok) return result;
  }
  return { ok: true };
}

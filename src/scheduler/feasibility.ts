// Feasibility as one answer (ok, or the reason), from the stages in stages/feasibility.ts.

import { type FeasibilityJob, infeasibility } from "./stages/feasibility.ts";
import type { HostView } from "./view.ts";

export type Feasibility = { ok: true } | { ok: false; reason: string };

export function hostFeasibility(job: FeasibilityJob, host: HostView): Feasibility {
  const reason = infeasibility(job, host);
  return reason === null ? { ok: true } : { ok: false, reason };
}

// Feasibility: may this host run this job at all, before counting free capacity? Each rule
// answers with a reason the host is ruled out, or null; the first reason wins. New rules are new
// entries of FEASIBILITY_STAGES (explain reports them host by host through the same list). The
// stage of a pass (feasibleHosts) keeps the hosts that take work that no rule rules out.

import { evaluateRequirement } from "../../../common/model/cel.ts";
import { sharingFolder } from "../../../common/model/shared-folders.ts";
import { missingTransfer } from "../../../common/model/transfers.ts";
import type { HostView, JobView } from "../view.ts";
import { walltimeInfeasibility } from "../walltime.ts";

export type FeasibilityJob = Pick<
  JobView,
  | "cpus"
  | "memoryMb"
  | "gpus"
  | "custom"
  | "requirements"
  | "workdir"
  | "transfers"
  | "container"
  | "expectedSeconds"
  | "checkpoints"
>;
export type FeasibilityStage = (job: FeasibilityJob, host: HostView) => string | null;

export const hostIsReady: FeasibilityStage = (_job, host) =>
  host.state === "ready" ? null : `host is ${host.state}`;

export const agentIsConnected: FeasibilityStage = (_job, host) =>
  host.connected ? null : "host agent is not connected";

/**
 * A host whose agent's work folder is full (its fact `diskFull`: less free than `diskMinFreeMb`,
 * its content cache emptied first) takes no new work until space is freed there: an attempt could
 * not stage its inputs. An agent of an earlier release says nothing of it: never full.
 */
export const workFolderHasRoom: FeasibilityStage = (_job, host) =>
  host.facts.diskFull === true
    ? `host's work folder is full: ${host.facts.diskFreeMb} MB free, under the ${host.facts.diskMinFreeMb ?? 0} MB its agent keeps free`
    : null;

export const enoughSlots: FeasibilityStage = (job, host) =>
  job.cpus > host.slots ? `job needs ${job.cpus} cpus, host has ${host.slots} slots` : null;

export const enoughMemory: FeasibilityStage = (job, host) =>
  job.memoryMb > host.facts.memoryMb
    ? `job needs ${job.memoryMb} MB, host has ${host.facts.memoryMb} MB`
    : null;

/** GPUs and countable resources: the host must declare at least what one task takes. */
export const enoughCountable: FeasibilityStage = (job, host) => {
  const gpus = job.gpus ?? 0;
  const declared = host.facts.gpus?.length ?? 0;
  if (gpus > declared) return `job needs ${gpus} ${gpus === 1 ? "gpu" : "gpus"}, host has ${declared}`;
  if (job.custom) {
    for (const name in job.custom) {
      const units = job.custom[name];
      const has = host.facts.resources?.[name] ?? 0;
      if (units > has) return `job needs ${units} ${name}, host has ${has}`;
    }
  }
  return null;
};

/**
 * A job run in place (its `workdir`) goes only to a host that shares a folder holding it (its
 * agent's `--shared`, the fact `host.shared`): elsewhere the folder is not the job's files.
 */
export const sharesWorkdir: FeasibilityStage = (job, host) => {
  if (job.workdir === undefined) return null;
  const shared = host.facts.shared ?? [];
  if (sharingFolder(job.workdir, shared) !== undefined) return null;
  const what = shared.length === 0 ? "shares no folder" : `shares only ${shared.join(", ")}`;
  return `workdir ${job.workdir} is in no folder this host shares (it ${what})`;
};

/**
 * A job with s3: inputs or outputs pushed to a URL goes only to a host whose agent moves them
 * itself (its `transfers` fact, model/transfers.ts): an agent of an earlier release would drop the
 * start message's fields it does not know and run the job without them.
 */
export const movesItsData: FeasibilityStage = (job, host) => {
  const missing = missingTransfer(job.transfers ?? [], host.facts.transfers);
  return missing === null ? null : `host agent does not do ${missing} (an earlier release)`;
};

/**
 * A job in a container goes only to a host whose agent found a container runtime (its fact
 * `containers`; `containersUnavailable` says why it found none), and that shares the folders of
 * the host paths the container names (an absolute image, mounts' sources), as a `workdir`.
 */
export const runsItsContainer: FeasibilityStage = (job, host) => {
  if (!job.container) return null;
  if (!host.facts.containers) {
    const why = host.facts.containersUnavailable ?? "an agent of an earlier release";
    return `job runs in a container (${job.container.image}), host has no container runtime: ${why}`;
  }
  const shared = host.facts.shared ?? [];
  const outside = job.container.hostPaths.find((path) => sharingFolder(path, shared) === undefined);
  if (outside === undefined) return null;
  const what = shared.length === 0 ? "shares no folder" : `shares only ${shared.join(", ")}`;
  return `container path ${outside} is in no folder this host shares (it ${what})`;
};

export const requirementsHold: FeasibilityStage = (job, host) => {
  if (!job.requirements) return null;
  const result = evaluateRequirement(job.requirements, host.facts);
  return result.ok ? null : result.reason;
};

/** A pilot takes only work that ends (or can move) before its walltime (scheduler/walltime.ts). */
export const fitsBeforeWalltime: FeasibilityStage = (job, host) => walltimeInfeasibility(job, host.walltime);

export const FEASIBILITY_STAGES: readonly FeasibilityStage[] = [
  hostIsReady,
  agentIsConnected,
  workFolderHasRoom,
  enoughSlots,
  enoughMemory,
  enoughCountable,
  sharesWorkdir,
  movesItsData,
  runsItsContainer,
  fitsBeforeWalltime,
  requirementsHold,
];

/** The first stage's reason to rule the host out, or null when the host is feasible. */
export function infeasibility(
  job: FeasibilityJob,
  host: HostView,
  stages: readonly FeasibilityStage[] = FEASIBILITY_STAGES,
): string | null {
  for (const stage of stages) {
    const reason = stage(job, host);
    if (reason !== null) return reason;
  }
  return null;
}

/**
 * The feasibility stage: the hosts of `hosts` that take work in this pass (those `open` has: the
 * pass's room) and that no rule rules out for the job, in the order given.
 */
export function feasibleHosts(
  job: FeasibilityJob,
  hosts: readonly HostView[],
  open: { has(name: string): boolean },
): HostView[] {
  return hosts.filter((host) => open.has(host.name) && infeasibility(job, host) === null);
}

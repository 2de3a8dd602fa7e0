// The checks a job meets when it is submitted (or changed while queued), against the server's QoS
// policy and its owner's standing: may the owner use the tier the job asks for (a token's `--qos`
// list), and do the tier's and the group's limits on queued tasks, tasks per job and time limit
// let it in. Each answers a refusal (the HTTP status and a sentence naming the limit and the
// current use) or null. The running limits do not refuse: they hold jobs back (qos.ts). Pure.

import { type JobSpec, nodesOf } from "../../common/model/job-spec.ts";
import { type QosPolicy, type QosTier, tierOf } from "../../common/model/qos-file.ts";

/** What a submit needs to know of the job's owner. */
export interface OwnerStanding {
  user: string;
  /** The user's group (a token's `--group`), or null. */
  group: string | null;
  /** The tiers the submitter may use (a token's `--qos`); null: any (an admin). */
  allowedQos: readonly string[] | null;
  /** Tasks not ended (waiting, pending, held, running) of the user's jobs in the job's tier, the job itself left out. */
  queuedTasks: number;
  /** Tasks not ended of the jobs of the group's users, every tier (0 without a group). */
  groupQueuedTasks: number;
}

/** Why a submit is refused: 400 (the job cannot be accepted as it is), 429 (a limit of its owner's use). */
export interface Refusal {
  status: 400 | 429;
  field: string;
  message: string;
}

type Tiered = Pick<JobSpec, "qos">;
type Sized = Pick<JobSpec, "qos" | "array" | "timeLimitSeconds" | "resources" | "nodes">;

/** The job's tier must exist and its submitter may use it. */
export function qosAccessRefusal(
  spec: Tiered,
  standing: Pick<OwnerStanding, "user" | "allowedQos">,
  policy: QosPolicy,
): Refusal | null {
  if (!policy.tiers.has(spec.qos))
    return {
      status: 400,
      field: "qos",
      message: `no QoS tier ${spec.qos}; the tiers are ${[...policy.tiers.keys()].join(", ")}`,
    };
  if (standing.allowedQos !== null && !standing.allowedQos.includes(spec.qos)) {
    const allowed = standing.allowedQos.filter((name) => policy.tiers.has(name));
    return {
      status: 400,
      field: "qos",
      message: `user ${standing.user} may not use QoS ${spec.qos}; their token allows ${allowed.length > 0 ? allowed.join(", ") : "none of the tiers"}`,
    };
  }
  return null;
}

/** The tasks a job adds to its owner's queue. */
function tasksOf(spec: Pick<JobSpec, "array">): number {
  return spec.array?.count ?? 1;
}

/**
 * The limits a submit meets: the tier's time limit (400), tasks per job and queued tasks of the
 * tier per user and of the group (429, naming the limit and the current use). `adds`: the tasks
 * it makes queued (a submit: the job's; a retry: those it gives new attempts).
 */
export function submitQuotaRefusal(
  spec: Sized,
  standing: OwnerStanding,
  policy: QosPolicy,
  adds = tasksOf(spec),
): Refusal | null {
  const tier = tierOf(policy, spec.qos);
  const jobTasks = tasksOf(spec);
  const group = standing.group === null ? undefined : policy.groups.get(standing.group);
  if (
    tier.maxWallSeconds !== null &&
    spec.timeLimitSeconds !== undefined &&
    spec.timeLimitSeconds > tier.maxWallSeconds
  )
    return {
      status: 400,
      field: "timeLimitSeconds",
      message: `QoS ${spec.qos} allows a time limit of ${tier.maxWallSeconds} s at most, and the job asks for ${spec.timeLimitSeconds} s`,
    };
  // A task (every rank of a gang) larger than a running limit would wait for ever.
  const ranks = nodesOf(spec);
  const task = { CPUs: spec.resources.cpus * ranks, GPUs: (spec.resources.gpus ?? 0) * ranks };
  const running = [
    [`QoS ${spec.qos} allows a user`, tier.maxRunningCpus, tier.maxRunningGpus],
    [`group ${standing.group} allows`, group?.maxRunningCpus ?? null, group?.maxRunningGpus ?? null],
  ] as const;
  for (const [who, cpus, gpus] of running)
    for (const [unit, limit] of [
      ["CPUs", cpus],
      ["GPUs", gpus],
    ] as const)
      if (limit !== null && task[unit] > limit)
        return {
          status: 400,
          field: "resources",
          message: `a task of this job needs ${task[unit]} ${unit} and ${who} ${limit} running: it could never start`,
        };
  if (tier.maxArrayTasks !== null && jobTasks > tier.maxArrayTasks)
    return {
      status: 429,
      field: "array",
      message: `QoS ${spec.qos} allows ${tier.maxArrayTasks} tasks per job, and this job has ${jobTasks}`,
    };
  if (group?.maxArrayTasks != null && jobTasks > group.maxArrayTasks)
    return {
      status: 429,
      field: "array",
      message: `group ${standing.group} allows ${group.maxArrayTasks} tasks per job, and this job has ${jobTasks}`,
    };
  if (tier.maxQueuedTasks !== null && standing.queuedTasks + adds > tier.maxQueuedTasks)
    return {
      status: 429,
      field: "qos",
      message: `user ${standing.user} has ${standing.queuedTasks} tasks queued (not ended) in QoS ${spec.qos} and the limit is ${tier.maxQueuedTasks}; this job adds ${adds}`,
    };
  if (group?.maxQueuedTasks != null && standing.groupQueuedTasks + adds > group.maxQueuedTasks)
    return {
      status: 429,
      field: "qos",
      message: `group ${standing.group} has ${standing.groupQueuedTasks} tasks queued (not ended) and the limit is ${group.maxQueuedTasks}; this job adds ${adds}`,
    };
  return null;
}

/**
 * The time limit a job runs with: its own, or its tier's maxWallSeconds when it names none (a job
 * of a tier with a wall limit never runs without one).
 */
export function timeLimitOf(
  spec: Pick<JobSpec, "timeLimitSeconds">,
  tier: Pick<QosTier, "maxWallSeconds">,
): number | undefined {
  return spec.timeLimitSeconds ?? tier.maxWallSeconds ?? undefined;
}

// The QoS file (`steward server --qos FILE`): the service tiers a job may ask for with `qos: NAME`,
// each with a priority between tiers, the tiers it may preempt, and limits per user of the tier;
// and limits per group of users (a token's `--group`). Validated like job files: strict at every
// level, and an error names the line and the key (`line 4: tiers.high.preempt[0]: ...`); a
// server with a bad QoS file does not start. Without a file there is one tier, `normal`, with
// priority 0, preempting nothing and no limits: what a server without tiers always did.

import { isMap, isNode, isScalar, LineCounter, parseDocument } from "yaml";
import { z } from "zod";
import { firstProblem } from "./first-problem.ts";
import { DEFAULT_QOS, QOS_NAME } from "./qos-name.ts";

const NAME_RULE = "must be 1 to 63 lower-case letters, digits, - or _, not starting with - or _";
const name = z.string().regex(QOS_NAME, NAME_RULE);

const limit = (what: string) =>
  z
    .int()
    .min(0)
    .nullable()
    .default(null)
    .meta({ description: `${what} (absent or null: no limit)` });

const tierSchema = z.strictObject({
  /** Between users, a higher tier's jobs have their turn first (within a user, job priority orders). */
  priority: z.int().min(-1_000_000).max(1_000_000).default(0),
  /** Tiers whose running jobs this tier's jobs may preempt (each of a lower priority). */
  preempt: z.array(name).default([]),
  maxRunningCpus: limit("cpus one user's running jobs of the tier hold at most"),
  maxRunningGpus: limit("GPUs one user's running jobs of the tier hold at most"),
  maxQueuedTasks: limit("tasks one user may have queued (not ended) in the tier"),
  maxArrayTasks: limit("tasks one job of the tier may have"),
  maxWallSeconds: z.number().positive().nullable().default(null),
});

const groupSchema = z.strictObject({
  maxRunningCpus: limit("cpus the group's running jobs hold at most"),
  maxRunningGpus: limit("GPUs the group's running jobs hold at most"),
  maxQueuedTasks: limit("tasks the group's users may have queued (not ended), every tier"),
  maxArrayTasks: limit("tasks one job of the group's users may have"),
});

const qosFileSchema = z
  .strictObject({
    tiers: z.record(z.string(), tierSchema),
    groups: z.record(z.string(), groupSchema).default({}),
  })
  .superRefine((file, context) => {
    const refuse = (path: (string | number)[], message: string) =>
      context.addIssue({ code: "custom", path, message });
    for (const section of ["tiers", "groups"] as const)
      for (const key of Object.keys(file[section]))
        if (!QOS_NAME.test(key)) refuse([section, key], NAME_RULE);
    if (!Object.hasOwn(file.tiers, DEFAULT_QOS))
      refuse(["tiers"], `must define ${DEFAULT_QOS}, the tier of jobs that name none`);
    for (const [tierName, tier] of Object.entries(file.tiers)) {
      tier.preempt.forEach((other, index) => {
        const path = ["tiers", tierName, "preempt", index];
        const target = Object.hasOwn(file.tiers, other) ? file.tiers[other] : undefined;
        if (!target) refuse(path, `no tier ${other} (tiers: ${Object.keys(file.tiers).join(", ")})`);
        else if (target.priority >= tier.priority)
          refuse(
            path,
            `${tierName} (priority ${tier.priority}) may only preempt tiers of a lower priority, and ${other} has ${target.priority}`,
          );
      });
    }
  });

export type QosTier = z.output<typeof tierSchema>;
export type GroupLimits = z.output<typeof groupSchema>;

/** The tiers and group limits a server applies. */
export interface QosPolicy {
  readonly tiers: ReadonlyMap<string, QosTier>;
  readonly groups: ReadonlyMap<string, GroupLimits>;
}

export const NO_LIMITS = {
  maxRunningCpus: null,
  maxRunningGpus: null,
  maxQueuedTasks: null,
  maxArrayTasks: null,
} as const;

/** The `normal` tier of a server without a QoS file: priority 0, preempts nothing, no limits. */
export const DEFAULT_TIER: QosTier = { priority: 0, preempt: [], ...NO_LIMITS, maxWallSeconds: null };

/** A server without a QoS file: the one tier `normal`, no groups' limits. */
export const DEFAULT_QOS_POLICY: QosPolicy = {
  tiers: new Map([[DEFAULT_QOS, DEFAULT_TIER]]),
  groups: new Map(),
};

/**
 * A job's tier as the server applies it: a tier the policy no longer names (a job submitted under
 * an earlier QoS file) counts as the default tier's settings.
 */
export function tierOf(policy: QosPolicy, qos: string | undefined): QosTier {
  return policy.tiers.get(qos ?? DEFAULT_QOS) ?? policy.tiers.get(DEFAULT_QOS) ?? DEFAULT_TIER;
}

export class QosFileError extends Error {
  readonly field: string;
  constructor(field: string, message: string, line: number | null) {
    const at = line === null ? "" : `line ${line}: `;
    super(`${at}${field ? `${field}: ` : ""}${message}`);
    this.name = "QosFileError";
    this.field = field;
  }
}

/** The policy of a QoS file's text (YAML or JSON); throws QosFileError naming the line and the key. */
export function parseQosFile(text: string): QosPolicy {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines });
  if (doc.errors.length > 0) {
    const [error] = doc.errors;
    const message = error.message.split("\n")[0].replace(/ at line \d+, column \d+:?$/, "");
    throw new QosFileError("", `not valid YAML: ${message}`, lines.linePos(error.pos[0]).line);
  }
  const input: unknown = doc.toJS();
  if (input === null || typeof input !== "object" || Array.isArray(input))
    throw new QosFileError("", "a QoS file must be a mapping with a `tiers` map", 1);
  const result = qosFileSchema.safeParse(input);
  if (result.success)
    return {
      tiers: new Map(Object.entries(result.data.tiers)),
      groups: new Map(Object.entries(result.data.groups)),
    };
  const { field, message } = firstProblem(result.error);
  const issue =
    result.error.issues.find((each) => each.code === "unrecognized_keys") ?? result.error.issues[0];
  // The line of the deepest node the path reaches.
  let line: number | null = null;
  if (issue.code === "unrecognized_keys") {
    const parent = doc.getIn(issue.path as (string | number)[], true);
    const pair = isMap(parent)
      ? parent.items.find((item) => isScalar(item.key) && item.key.value === issue.keys[0])
      : undefined;
    if (pair && isNode(pair.key) && pair.key.range) line = lines.linePos(pair.key.range[0]).line;
  }
  for (let depth = issue.path.length; depth >= 0 && line === null; depth--) {
    const node = doc.getIn(issue.path.slice(0, depth) as (string | number)[], true);
    if (isNode(node) && node.range) line = lines.linePos(node.range[0]).line;
  }
  throw new QosFileError(field, message, line);
}

// Batches: tasks that ask for the same resources under the same requirements are alike for
// placement, so once one of them fits nowhere in a pass, none of the others is tried again in it
// (capacity only shrinks during a pass). This is what keeps a 100,000-task array that fits nowhere
// from being walked task by task on every pass.

import type { CompiledExpression } from "../../common/model/cel.ts";
import { dataAffinityKey } from "./data-affinity.ts";
import type { FeasibilityJob } from "./stages/feasibility.ts";
import type { JobView } from "./view.ts";

/** Expressions without their text (built by hand) are alike only to themselves. */
const anonymous = new WeakMap<CompiledExpression, string>();
let anonymousCount = 0;

function expressionKey(expression: CompiledExpression | null): string {
  if (!expression) return "";
  if (expression.source !== undefined) return `=${expression.source}`;
  let key = anonymous.get(expression);
  if (!key) {
    key = `#${++anonymousCount}`;
    anonymous.set(expression, key);
  }
  return key;
}

/**
 * What makes two tasks alike for placement: resources, requirements, the folder they run in (a
 * workdir: only hosts sharing it take them), what their agent must move itself (transfers: only
 * hosts whose agent does take them), whether they run in a container and the host paths it names,
 * and what pilots' walltimes hold against them
 * (expected length, checkpoints); not rank, which only orders.
 */
export function batchKey(job: FeasibilityJob): string {
  const walltime = `${job.expectedSeconds ?? ""}\u0000${job.checkpoints ? 1 : 0}`;
  const countable =
    job.gpus || job.custom ? `\u0000${job.gpus ?? 0}\u0000${JSON.stringify(job.custom ?? {})}` : "";
  const inPlace = job.workdir === undefined ? "" : `\u0002${job.workdir}`;
  const moved = job.transfers && job.transfers.length > 0 ? `\u0003${job.transfers.join(",")}` : "";
  const contained = job.container ? `\u0004${job.container.hostPaths.join("\u0000")}` : "";
  return `${job.cpus}\u0000${job.memoryMb}\u0000${expressionKey(job.requirements)}\u0000${walltime}${countable}${inPlace}${moved}${contained}`;
}

/**
 * What makes two jobs of one batch (`batch`: its batchKey) score hosts alike: the rank expression,
 * and the job's input digests when some host holds any of them (`held`: data-affinity.ts). Null
 * for a job with hosts it broke its contract on (scored for itself alone).
 */
export function scoreKey(
  job: Pick<JobView, "rank" | "slowHosts" | "inputDigests">,
  batch: string,
  held: boolean = false,
): string | null {
  if (job.slowHosts && job.slowHosts.length > 0) return null;
  const data = held && job.inputDigests ? `\u0003${dataAffinityKey(job.inputDigests)}` : "";
  return `${batch}\u0001${expressionKey(job.rank)}${data}`;
}

/** The batch keys that found no room in this pass. */
export class ExhaustedBatches {
  readonly #keys = new Set<string>();

  has(key: string): boolean {
    return this.#keys.has(key);
  }

  add(key: string): void {
    this.#keys.add(key);
  }
}

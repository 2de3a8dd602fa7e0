// Records of the broker's own, changed through the reactor like the rest (one writer): a meta entry
// (small records such as the pilots a pool submitted, pools/pilot-ledger.ts) and the purge of old
// accounting rows. Each is committed before its command resolves.

import type { Step } from "../step.ts";

/** Sets a meta entry. */
export function setMeta(step: Step, key: string, value: string): void {
  step.write.setMeta(key, value);
}

/** Drops the accounting rows of removed jobs whose attempts ended more than `days` days before now. */
export function purgeAccounting(step: Step, days: number): void {
  step.write.purgeAccounting(step.now - days * 86_400_000);
}

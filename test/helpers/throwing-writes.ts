// A fault injected into a handler: its k-th write throws before it writes, or it throws once done
// (after its last write, before the step is returned). Run for k = 1, 2, ... until the handler ends
// before its k-th write, it takes the handler through every point where it could throw half-way
// (test/unit/broker/reactor/handlers/state-round-trip.test.ts; the rule in src/broker/reactor/writes.ts).

import { StateWrites } from "../../src/broker/reactor/writes.ts";

/** What an injected fault throws. */
export class InjectedFault extends Error {
  /** Thrown at the k-th write, or null when the handler was let run to its end. */
  readonly write: number | null;

  constructor(write: number | null) {
    super(write === null ? "injected fault after the last write" : `injected fault at write ${write}`);
    this.write = write;
  }
}

/** StateWrites' writing methods (a write called from another counts too); not its undo log's. */
const WRITES = Object.getOwnPropertyNames(StateWrites.prototype).filter(
  (name) => !["constructor", "rollback", "onRollback", "mark"].includes(name),
);

/**
 * Makes the k-th write (from 1) of these writes throw an InjectedFault before it writes, by
 * methods of the object's own over the class's.
 */
export function throwAtWrite(writes: StateWrites, k: number): void {
  let made = 0;
  const methods = writes as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const name of WRITES) {
    const write = methods[name];
    methods[name] = (...args: unknown[]) => {
      made++;
      if (made === k) throw new InjectedFault(k);
      return write.apply(writes, args);
    };
  }
}

// What the fault benchmarks (lcg-faults.ts, soak.ts) read from the environment, and the slow link
// they put between agents and brokers.

import type { ForwarderMode } from "../test/helpers/tcp-forwarder.ts";

/** A slow link: each chunk held 200 ms plus up to 50 ms more, in order. */
export const DELAY_LINK: ForwarderMode = { kind: "delay", ms: 200, jitterMs: 50 };

/** A number from the environment variable `name`, or `fallback` when it is unset; throws on anything else. */
export function numberSetting(name: string, fallback: number): number {
  const text = process.env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value < 0) throw new Error(`${name}=${text}: expected a number >= 0`);
  return value;
}

// What `steward explain` says of a job's data affinity (data-affinity.ts): how many of its inputs
// are known by digest, which hosts' caches hold how many bytes of them, and what the scheduler
// does with that. The same lookup the pass makes (inputBytesByHost), so it says what the pass sees.

import { inputBytesByHost } from "./data-affinity.ts";
import type { CachedObjects, JobView } from "./view.ts";

/** Hosts a line names before it says how many more there are (the JSON has them all). */
const HOSTS_NAMED = 5;

export interface DataAffinityExplanation {
  /** The job's inputs known by digest (each distinct content once). */
  inputs: number;
  /** The hosts whose cache holds some of them, with the bytes it holds: the most first, then by name. */
  hosts: { host: string; bytes: number }[];
  /** The sentence the CLI prints. */
  line: string;
}

/** Null for a job none of whose inputs is known by digest: the term does not apply to it. */
export function explainDataAffinity(
  job: Pick<JobView, "inputDigests">,
  cached: CachedObjects | undefined,
): DataAffinityExplanation | null {
  const digests = job.inputDigests ?? [];
  if (digests.length === 0) return null;
  const known = `${digests.length} ${digests.length === 1 ? "input" : "inputs"} known by digest`;
  const held = inputBytesByHost(digests, cached);
  const hosts = [...(held ?? [])]
    .map(([host, bytes]) => ({ host, bytes }))
    .sort((a, b) => b.bytes - a.bytes || (a.host < b.host ? -1 : a.host > b.host ? 1 : 0));
  if (hosts.length === 0)
    return { inputs: digests.length, hosts, line: `data affinity: no host's cache holds its ${known}` };
  const named = hosts.slice(0, HOSTS_NAMED).map((each) => `${each.host} ${bytesText(each.bytes)}`);
  const more = hosts.length > HOSTS_NAMED ? ` and ${hosts.length - HOSTS_NAMED} more` : "";
  return {
    inputs: digests.length,
    hosts,
    line:
      `data affinity: hosts whose cache holds more of its ${known} go first among those with room, after its rank` +
      ` (a free host never waits for them): ${named.join(", ")}${more}`,
  };
}

/** `512 bytes`, `1.5 KiB`, `20.0 MiB`, `3.2 GiB`. */
export function bytesText(bytes: number): string {
  if (bytes < 1024) return `${bytes} bytes`;
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}

// A prom-client registry's series read in tests: each sample keyed by its labels, so that a test
// states what a scrape holds as one object.

import type { Registry } from "prom-client";

/**
 * Each sample of a series as `[name_suffix ]label=value,...` (labels sorted) to its value; the
 * suffix only for a histogram's samples (_bucket, _sum, _count).
 */
export async function seriesOf(registry: Registry, name: string): Promise<Record<string, number>> {
  const metric = registry.getSingleMetric(name);
  if (!metric) throw new Error(`no series ${name}`);
  const found: Record<string, number> = {};
  for (const sample of (await metric.get()).values) {
    const key = Object.entries(sample.labels)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([label, value]) => `${label}=${value}`)
      .join(",");
    // A histogram's samples name their series (_bucket, _sum, _count), which prom-client's types leave out.
    const suffix = (sample as { metricName?: string }).metricName?.slice(name.length + 1);
    found[suffix ? `${suffix} ${key}` : key] = sample.value;
  }
  return found;
}

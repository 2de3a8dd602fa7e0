// A scrape of a server's /metrics, read as samples: each series' name, labels and value.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of the Prometheus text format (comments and blank lines skipped). */
export function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const label of (match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[label[1]] = label[2];
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

/** GET /metrics with the server's token. */
export async function scrape(server: { url: string; token: string }): Promise<Sample[]> {
  const response = await fetch(`${server.url}/metrics`, {
    headers: { authorization: `Bearer ${server.token}` },
  });
  if (!response.ok) throw new Error(`GET /metrics: HTTP ${response.status}`);
  return parseMetrics(await response.text());
}

/** A host's content cache counters as /metrics shows them (null before its agent reported any). */
export async function hostCacheCounters(
  server: { url: string; token: string },
  host: string,
): Promise<{ hits: number; misses: number; fetched: number; saved: number; held: number } | null> {
  const samples = await scrape(server);
  const of = (name: string) =>
    samples.find((sample) => sample.name === name && sample.labels.host === host)?.value ?? null;
  const hits = of("steward_cache_hits_total");
  if (hits === null) return null;
  return {
    hits,
    misses: of("steward_cache_misses_total") ?? 0,
    fetched: of("steward_cache_fetched_bytes_total") ?? 0,
    saved: of("steward_cache_saved_bytes_total") ?? 0,
    held: of("steward_cache_bytes") ?? 0,
  };
}

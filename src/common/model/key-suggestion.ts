// The known key an unknown one was most likely meant to be, for `unknown key (did you mean X?)`:
// a known alias first (`timeLimit` is `timeLimitSeconds`), then the same key but for case, `_` or
// `-` (`time_limit_seconds`), then the nearest by edit distance within a few edits, then a known
// key the typed one begins (`backoff` is `backoffSeconds`).

/** Edits allowed for a key of this length: 1 up to 4 characters, 2 up to 8, then 3. */
function allowedEdits(length: number): number {
  return length <= 4 ? 1 : length <= 8 ? 2 : 3;
}

/** Lower case without `_` and `-`: `max_attempts` and `maxAttempts` are the same key. */
function normal(key: string): string {
  return key.toLowerCase().replace(/[_-]/g, "");
}

/**
 * The suggestion for `typed` among `known` keys, or null when none is near. `aliases` maps other
 * names users write (normalised or not) to what to suggest, which may be a path elsewhere in the
 * file (`memory` at the top is `resources.memoryMb`).
 */
export function nearestKey(
  typed: string,
  known: readonly string[],
  aliases: Readonly<Record<string, string>> = {},
): string | null {
  const wanted = normal(typed);
  for (const [alias, meant] of Object.entries(aliases)) if (normal(alias) === wanted) return meant;
  const same = known.find((key) => normal(key) === wanted);
  if (same !== undefined) return same;
  let best: string | null = null;
  let bestDistance = allowedEdits(wanted.length) + 1;
  for (const key of known) {
    const distance = editDistance(wanted, normal(key));
    if (distance < bestDistance) {
      best = key;
      bestDistance = distance;
    }
  }
  if (best !== null) return best;
  if (wanted.length < 4) return null;
  return known.find((key) => normal(key).startsWith(wanted)) ?? null;
}

/** Edits (insert, delete, replace, swap two neighbours) from `a` to `b` (optimal string alignment). */
export function editDistance(a: string, b: string): number {
  const rows: number[][] = [];
  for (let i = 0; i <= a.length; i++) {
    rows.push(new Array<number>(b.length + 1).fill(0));
    rows[i][0] = i;
  }
  for (let j = 0; j <= b.length; j++) rows[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let value = Math.min(rows[i - 1][j] + 1, rows[i][j - 1] + 1, rows[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1])
        value = Math.min(value, rows[i - 2][j - 2] + 1);
      rows[i][j] = value;
    }
  }
  return rows[a.length][b.length];
}

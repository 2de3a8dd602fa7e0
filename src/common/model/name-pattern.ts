// A job name pattern, as `steward ps --name` and `GET /api/v1/jobs?name=` take it: a glob where
// `*` is any run of characters (none too) and `?` any one character, matched against the whole
// name, case included; a pattern without either is the exact name.

/** Whether a pattern has a wildcard (`*` or `?`); without one it names one exact name. */
export function isGlob(pattern: string): boolean {
  return /[*?]/.test(pattern);
}

/** A test of names against the pattern. */
export function nameMatcher(pattern: string): (name: string) => boolean {
  if (!isGlob(pattern)) return (name) => name === pattern;
  const source = [...pattern]
    .map((character) =>
      character === "*" ? ".*" : character === "?" ? "." : character.replace(/[.+^${}()|[\]\\]/g, "\\$&"),
    )
    .join("");
  const regex = new RegExp(`^${source}$`, "su");
  return (name) => regex.test(name);
}

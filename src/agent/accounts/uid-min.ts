// The lowest uid an agent runs jobs as (--run-as, --run-as-owner): accounts below it are the
// system's (daemon, bin, www-data, those made with `useradd -r`), which own system files and
// services, so a job owner named like one must not get its rights. The limit is the system's own
// UID_MIN, read from /etc/login.defs as shadow's tools read it (useradd gives ordinary accounts
// uids from there), 1000 when the file or the setting is absent or unreadable; --run-as-min-uid N
// sets it instead.

import { readFileSync } from "node:fs";

export const LOGIN_DEFS = "/etc/login.defs";

/** UID_MIN when /etc/login.defs does not set it (shadow's own default). */
export const DEFAULT_UID_MIN = 1000;

export interface UidLimit {
  min: number;
  /** Where the limit comes from: /etc/login.defs, the default, or --run-as-min-uid. */
  source: "login.defs" | "default" | "flag";
}

/**
 * A whole number as shadow reads a login.defs value (strtol, base 0): decimal, 0x hexadecimal or
 * 0 octal, nothing else on the line; null for anything else, a negative or an overlong number.
 */
function parseDefNumber(value: string): number | null {
  let parsed: number;
  if (/^\+?0[xX][0-9a-fA-F]+$/.test(value)) parsed = Number.parseInt(value.replace(/^\+?0[xX]/, ""), 16);
  else if (/^\+?0[0-7]*$/.test(value)) parsed = Number.parseInt(value.replace(/^\+/, ""), 8);
  else if (/^\+?[1-9][0-9]*$/.test(value)) parsed = Number.parseInt(value, 10);
  else return null;
  return parsed <= 0x7fffffff ? parsed : null;
}

/**
 * UID_MIN in the text of a login.defs, or null when it sets none or none that is a number. As
 * shadow reads it: a line is NAME, blanks, VALUE (in double quotes or not); lines starting with
 * `#` are comments; the last line naming UID_MIN decides, and a value that is no number there
 * leaves the default.
 */
export function parseUidMin(text: string): number | null {
  let value: string | null = null;
  for (const raw of text.split("\n")) {
    const line = raw.trim();
    if (line === "" || line.startsWith("#")) continue;
    const match = /^(\S+)\s*(.*)$/.exec(line);
    if (match?.[1] !== "UID_MIN") continue;
    value = match[2].replace(/^"(.*)"$/, "$1");
  }
  return value === null ? null : parseDefNumber(value);
}

/** The limit: `flag` (--run-as-min-uid) when given, else UID_MIN of `path`, else the default. */
export function uidLimit(flag?: number, path = LOGIN_DEFS): UidLimit {
  if (flag !== undefined) return { min: flag, source: "flag" };
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return { min: DEFAULT_UID_MIN, source: "default" };
  }
  const min = parseUidMin(text);
  return min === null ? { min: DEFAULT_UID_MIN, source: "default" } : { min, source: "login.defs" };
}

/** The limit in the words of a refusal or of the agent's start line, with where it comes from. */
export function describeUidLimit(limit: UidLimit): string {
  switch (limit.source) {
    case "flag":
      return `uid ${limit.min} (--run-as-min-uid)`;
    case "login.defs":
      return `uid ${limit.min} (UID_MIN in ${LOGIN_DEFS}; --run-as-min-uid N to change)`;
    case "default":
      return `uid ${limit.min} (the default: no UID_MIN read from ${LOGIN_DEFS}; --run-as-min-uid N to change)`;
  }
}

// What attempts used, as text: the usage line of `steward show`, and `steward acct`'s table and CSV.
// Pure: rows in, text out; `--since` read with the time passed in.

import type { AccountingRow } from "../common/api/accounting.ts";
import type { Usage } from "../common/api/jobs.ts";
import { exitStatus } from "../common/model/attempt-usage.ts";
import { parseLifetime } from "../common/model/tokens.ts";
import { shortTime, table } from "./format.ts";

function seconds(value: number | null): string {
  return value === null ? "-" : `${value.toFixed(2)} s`;
}

function megabytes(value: number | null): string {
  return value === null ? "-" : `${value.toFixed(1)} MB`;
}

/** The measured figures of a usage (what `steward show` and `acct` print of it). */
type Figures = Pick<Usage, "userSeconds" | "systemSeconds" | "peakMemoryMb" | "wallSeconds">;

function cpuSeconds(usage: Figures): number | null {
  return usage.userSeconds === null || usage.systemSeconds === null
    ? null
    : usage.userSeconds + usage.systemSeconds;
}

/** `steward show`'s line of one ended attempt: CPU (user, system), peak memory, wall time, how it exited. */
export function usageLine(usage: Figures | null, exitCode: number | null): string {
  const exit = exitStatus(exitCode) ?? "exit unknown";
  if (!usage) return `usage not reported, ${exit}`;
  const cpu = cpuSeconds(usage);
  const cpuText =
    cpu === null
      ? "cpu not measured"
      : `cpu ${seconds(cpu)} (user ${seconds(usage.userSeconds)}, system ${seconds(usage.systemSeconds)})`;
  const memory =
    usage.peakMemoryMb === null ? "peak memory not measured" : `peak memory ${megabytes(usage.peakMemoryMb)}`;
  return `${cpuText}, ${memory}, wall ${seconds(usage.wallSeconds)}, ${exit}`;
}

const TABLE_HEADERS = [
  "JOB",
  "TASK",
  "ATTEMPT",
  "NAME",
  "OWNER",
  "HOST",
  "OUTCOME",
  "EXIT",
  "ENDED",
  "WALL",
  "CPU",
  "PEAK MEM",
];

/** `steward acct`'s table: one line an attempt. */
export function accountingTable(rows: readonly AccountingRow[]): string {
  return table(
    TABLE_HEADERS,
    rows.map((row) => [
      row.job,
      row.task,
      row.attempt,
      row.name,
      row.owner,
      row.host,
      row.outcome ?? "-",
      row.signal === null ? (row.exitCode ?? "-") : `sig ${row.signal}`,
      shortTime(row.endedAt),
      seconds(row.usage?.wallSeconds ?? null),
      seconds(row.usage ? cpuSeconds(row.usage) : null),
      megabytes(row.usage?.peakMemoryMb ?? null),
    ]),
  );
}

/** The columns of `steward acct --format csv`: the documented ones first, then the job's name and total CPU. */
export const CSV_HEADERS = [
  "job",
  "task",
  "attempt",
  "owner",
  "host",
  "outcome",
  "exitCode",
  "signal",
  "userSeconds",
  "systemSeconds",
  "peakMemoryMb",
  "wallSeconds",
  "startedAt",
  "endedAt",
  "name",
  "cpuSeconds",
] as const;

/** A CSV field (RFC 4180): quoted when it holds a comma, a quote or a line break; empty for null. */
function csvField(value: string | number | null): string {
  if (value === null) return "";
  const text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

/** `steward acct --format csv`: a header line, then one line an attempt; unmeasured figures are empty. */
export function accountingCsv(rows: readonly AccountingRow[]): string {
  const lines = [CSV_HEADERS.join(",")];
  for (const row of rows) {
    const usage = row.usage;
    lines.push(
      [
        row.job,
        row.task,
        row.attempt,
        row.owner,
        row.host,
        row.outcome,
        row.exitCode,
        row.signal,
        usage?.userSeconds ?? null,
        usage?.systemSeconds ?? null,
        usage?.peakMemoryMb ?? null,
        usage?.wallSeconds ?? null,
        row.startedAt,
        row.endedAt,
        row.name,
        usage ? cpuSeconds(usage) : null,
      ]
        .map(csvField)
        .join(","),
    );
  }
  return `${lines.join("\r\n")}\r\n`;
}

/**
 * `--since`: an age (`7d`, `12h`, `90m`, `2w`) counted back from `now`, or a date or time
 * (`2026-11-01`, `2026-11-01T08:00:00Z`); the time in ms, or null when the text is neither.
 */
export function parseSince(text: string, now: number): number | null {
  const age = parseLifetime(text);
  if (age !== null) return now - age;
  if (!/^\d{4}-\d{2}-\d{2}/.test(text.trim())) return null;
  const at = Date.parse(text.trim());
  return Number.isNaN(at) ? null : at;
}

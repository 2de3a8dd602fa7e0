// The columns of `steward ps`: the table's by default, or those `--format id,state,name` names, in
// that order. Pure; commands/ps.ts does the asking.

import { InvalidArgumentError } from "commander";
import type { JobSummary } from "../common/api/jobs.ts";
import { shortTime } from "./format.ts";

interface Column {
  header: string;
  cell: (job: JobSummary) => string | number;
}

/** Every column `--format` may name, each with its header and how it shows a job. */
export const PS_COLUMNS = {
  id: { header: "ID", cell: (job) => job.id },
  name: { header: "NAME", cell: (job) => job.name },
  owner: { header: "OWNER", cell: (job) => job.owner },
  state: { header: "STATE", cell: (job) => job.state },
  qos: { header: "QOS", cell: (job) => job.qos },
  prio: { header: "PRIO", cell: (job) => job.priority },
  done: { header: "DONE", cell: (job) => `${job.counts.succeeded}/${job.taskCount}` },
  run: { header: "RUN", cell: (job) => job.counts.running },
  fail: { header: "FAIL", cell: (job) => job.counts.failed },
  tasks: { header: "TASKS", cell: (job) => job.taskCount },
  submitted: { header: "SUBMITTED", cell: (job) => shortTime(job.createdAt) },
  ended: { header: "ENDED", cell: (job) => shortTime(job.endedAt) },
} as const satisfies Record<string, Column>;

export type PsColumn = keyof typeof PS_COLUMNS;

/** The columns of `steward ps` without --format. */
export const DEFAULT_PS_COLUMNS: readonly PsColumn[] = [
  "id",
  "name",
  "owner",
  "state",
  "qos",
  "prio",
  "done",
  "run",
  "fail",
  "submitted",
];

function isColumn(name: string): name is PsColumn {
  return Object.hasOwn(PS_COLUMNS, name);
}

/**
 * `--format`'s value: column names, comma-separated, in the order to show them (any case, spaces
 * around a name ignored); an unknown or repeated name, or none, is refused naming it.
 */
export function parsePsColumns(value: string): PsColumn[] {
  const names = value.split(",").map((name) => name.trim().toLowerCase());
  const columns: PsColumn[] = [];
  for (const name of names) {
    if (name === "") throw new InvalidArgumentError(`an empty column name: ${psColumnsHint()}`);
    if (!isColumn(name)) throw new InvalidArgumentError(`no column ${name}: ${psColumnsHint()}`);
    if (columns.includes(name)) throw new InvalidArgumentError(`column ${name} is named twice`);
    columns.push(name);
  }
  return columns;
}

function psColumnsHint(): string {
  return `columns are ${Object.keys(PS_COLUMNS).join(", ")}, comma-separated`;
}

/** The headers of `columns`. */
export function psHeaders(columns: readonly PsColumn[]): string[] {
  return columns.map((column) => PS_COLUMNS[column].header);
}

/** One row per job, its cells in the order of `columns`. */
export function psRows(jobs: readonly JobSummary[], columns: readonly PsColumn[]): (string | number)[][] {
  return jobs.map((job) => columns.map((column) => PS_COLUMNS[column].cell(job)));
}

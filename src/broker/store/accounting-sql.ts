// The queries of usage accounting, as both databases say them: the ended attempts of the jobs the
// store still holds, with those of removed jobs kept in `accounting`; the copy a removal makes;
// the purge of rows older than the server keeps them.

import { HELD_REASON } from "../../common/model/stop-reasons.ts";
import { ACCOUNTING, columnNames } from "./schema.ts";

const COLUMNS = columnNames(ACCOUNTING.columns);

/**
 * An attempt's outcome as accounting tells it: one a hold stopped (stored `preempted`, reason
 * `held`) reads `held` (model/states.ts ACCOUNTING_OUTCOMES); the attempt's own outcome is unchanged.
 */
const ACCOUNTED_OUTCOME = `CASE WHEN a.outcome = 'preempted' AND a.reason = '${HELD_REASON}' THEN 'held' ELSE a.outcome END`;

/** The ended attempts of the jobs still held, as accounting rows. */
const HELD =
  `SELECT a.job_id, j.name AS job_name, j.owner AS owner, a.task_index, a.number, a.host, ${ACCOUNTED_OUTCOME} AS outcome, a.exit_code, ` +
  "a.started_at, a.ended_at, a.usage FROM attempts a JOIN jobs j ON j.id = a.job_id WHERE a.ended_at IS NOT NULL";

/** `param(n)` is the database's n-th placeholder, 1-based. */
export function accountingSql(param: (n: number) => string) {
  const rows = (ownerCondition: string) =>
    `SELECT ${COLUMNS} FROM (${HELD} AND a.ended_at >= ${param(1)}${ownerCondition ? ` AND j.owner = ${param(3)}` : ""} ` +
    `UNION ALL SELECT ${COLUMNS} FROM accounting WHERE ended_at >= ${param(1)}${ownerCondition ? ` AND owner = ${param(3)}` : ""}) r ` +
    `ORDER BY ${ACCOUNTING.loadOrder} LIMIT ${param(2)}`;
  return {
    /** Rows that ended at or after $1, at most $2, oldest first. */
    accountingRows: rows(""),
    /** The same, of owner $3. */
    ownerAccountingRows: rows("owner"),
    /** Copies job $1's ended attempts into `accounting`, before the job is deleted. */
    keepJobAccounting: `INSERT INTO accounting (${COLUMNS}) ${HELD} AND a.job_id = ${param(1)} ON CONFLICT (${ACCOUNTING.key.join(", ")}) DO NOTHING`,
    /** Drops the kept rows of attempts that ended before $1. */
    purgeAccounting: `DELETE FROM accounting WHERE ended_at < ${param(1)}`,
  };
}

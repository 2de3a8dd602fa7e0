// The queries of a start from a long history (Store.loadLive), as both databases say them: the
// live jobs whole, the ended ones as headers with their task counts, and the ended attempts'
// cpu time summed by owner and minute (measured where the attempt's usage has it, else its cpus
// times its run time, as scheduler/fair-share.ts's attemptCpuSeconds counts it). A job is live while it has not ended or an attempt of it
// has not (a replica stopping); the partial index attempts_live finds those attempts at once.

import { DEFAULT_QOS } from "../../common/model/qos-name.ts";
import type { JobHeader, UsageSample } from "../../common/model/records.ts";
import { ATTEMPTS, CHECKPOINT_PARTS, columnNames, JOBS, selectColumns, TASKS } from "./schema.ts";

const ENDED_STATES = "('succeeded', 'failed', 'cancelled')";

/** The condition on `jobs j` that it is live. */
const LIVE = `(j.state NOT IN ${ENDED_STATES} OR j.id IN (SELECT a.job_id FROM attempts a WHERE a.state <> 'ended'))`;

/** The ids of the live jobs. */
export const LIVE_IDS = `SELECT j.id FROM jobs j WHERE ${LIVE}`;

export interface RecoveryDialect {
  /** A count of the rows that satisfy `condition` (SQLite: sum of a boolean; PostgreSQL: a filter). */
  countIf(condition: string): string;
  /** The cpus of `jobs j`'s job file, a number. */
  specCpus: string;
  /** The job file's QoS tier (jobs stored before tiers have none: the default tier). */
  specQos: string;
  /** How many hosts an attempt `a` ran on (its placement's length, at least 1). */
  placementHosts: string;
  /** Attempt `a`'s measured CPU time in ms (user + system of its usage), NULL when not measured. */
  measuredCpuMs: string;
  /** A parameter placeholder, 1-based. */
  param(n: number): string;
}

export function recoverySql(dialect: RecoveryDialect) {
  const count = (condition: string) => dialect.countIf(condition);
  return {
    liveJobs: `SELECT ${columnNames(selectColumns(JOBS))} FROM jobs j WHERE ${LIVE} ORDER BY ${JOBS.loadOrder}`,
    liveTasks: `SELECT ${columnNames(selectColumns(TASKS))} FROM tasks WHERE job_id IN (${LIVE_IDS}) ORDER BY ${TASKS.loadOrder}`,
    liveAttempts: `SELECT ${columnNames(selectColumns(ATTEMPTS))} FROM attempts WHERE job_id IN (${LIVE_IDS}) ORDER BY ${ATTEMPTS.loadOrder}`,
    liveCheckpointParts: `SELECT ${columnNames(selectColumns(CHECKPOINT_PARTS))} FROM checkpoint_parts WHERE job_id IN (${LIVE_IDS}) ORDER BY ${CHECKPOINT_PARTS.loadOrder}`,
    endedHeaders:
      "SELECT j.id, j.name, j.owner, j.state, j.priority, j.created_at, j.ended_at, count(t.idx), " +
      `${count("t.state IN ('pending', 'held', 'waiting')")}, ${count("t.state = 'running'")}, ` +
      `${count("t.state = 'succeeded'")}, ${count("t.state = 'failed'")}, ${count("t.state = 'cancelled'")}, ` +
      `${dialect.specQos} FROM jobs j LEFT JOIN tasks t ON t.job_id = j.id WHERE NOT ${LIVE} GROUP BY j.id ORDER BY j.created_at, j.id`,
    // The job file's cpus are read once per job and minute, not once per attempt (cpus times the
    // sum of hosts times run time: one group a job and minute, fewer than with the hosts apart).
    // An attempt's measured time is read from its usage once (a million ended attempts at start).
    usage:
      `SELECT j.owner, u.minute, sum(${dialect.specCpus} * u.ms / 1000.0 + u.measured / 1000.0) FROM (` +
      "SELECT m.job_id, m.minute, " +
      "sum(CASE WHEN m.measured IS NULL THEN m.hosts * m.ran ELSE 0 END) AS ms, coalesce(sum(m.measured), 0) AS measured FROM (" +
      `SELECT a.job_id, ${dialect.placementHosts} AS hosts, (a.ended_at / 60000) * 60000 AS minute, ` +
      `a.ended_at - a.started_at AS ran, CASE WHEN a.usage IS NULL THEN NULL ELSE ${dialect.measuredCpuMs} END AS measured ` +
      "FROM attempts a WHERE a.ended_at IS NOT NULL) m " +
      "GROUP BY m.job_id, m.minute) u JOIN jobs j ON j.id = u.job_id GROUP BY j.owner, u.minute",
    job: `SELECT ${columnNames(selectColumns(JOBS))} FROM jobs WHERE id = ${dialect.param(1)}`,
    jobTasks: `SELECT ${columnNames(selectColumns(TASKS))} FROM tasks WHERE job_id = ${dialect.param(1)} ORDER BY ${TASKS.loadOrder}`,
    jobAttempts: `SELECT ${columnNames(selectColumns(ATTEMPTS))} FROM attempts WHERE job_id = ${dialect.param(1)} ORDER BY ${ATTEMPTS.loadOrder}`,
    taskStates: `SELECT idx, state FROM tasks WHERE job_id = ${dialect.param(1)} ORDER BY idx`,
    task: `SELECT ${columnNames(selectColumns(TASKS))} FROM tasks WHERE job_id = ${dialect.param(1)} AND idx = ${dialect.param(2)}`,
    taskAttempts: `SELECT ${columnNames(selectColumns(ATTEMPTS))} FROM attempts WHERE job_id = ${dialect.param(1)} AND task_index = ${dialect.param(2)} ORDER BY number`,
    jobCheckpointParts: `SELECT ${columnNames(selectColumns(CHECKPOINT_PARTS))} FROM checkpoint_parts WHERE job_id = ${dialect.param(1)} ORDER BY ${CHECKPOINT_PARTS.loadOrder}`,
    submission: `SELECT id FROM jobs WHERE owner = ${dialect.param(1)} AND submit_key = ${dialect.param(2)}`,
  };
}

/** A row of `endedHeaders` as a header. */
export function decodeHeader(row: readonly unknown[]): JobHeader {
  return {
    id: row[0] as string,
    name: row[1] as string,
    owner: row[2] as string,
    state: row[3] as "succeeded" | "failed" | "cancelled",
    priority: Number(row[4]),
    createdAt: Number(row[5]),
    endedAt: row[6] === null ? null : Number(row[6]),
    taskCount: Number(row[7]),
    counts: {
      pending: Number(row[8] ?? 0),
      running: Number(row[9] ?? 0),
      succeeded: Number(row[10] ?? 0),
      failed: Number(row[11] ?? 0),
      cancelled: Number(row[12] ?? 0),
    },
    qos: typeof row[13] === "string" ? row[13] : DEFAULT_QOS,
  };
}

/** A row of `usage` as a sample. */
export function decodeUsage(row: readonly unknown[]): UsageSample {
  return { owner: row[0] as string, endedAt: Number(row[1]), cpuSeconds: Number(row[2]) };
}

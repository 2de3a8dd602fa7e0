-- The first schema. Records of src/common/model/records.ts, one table each; nested values (the job file,
-- labels, facts, checkpoint) are JSON text. Booleans are 0/1. Times are milliseconds since the epoch.
-- No foreign keys: a batch may name a job's tasks before the job itself, and deleteJob removes the
-- children explicitly. CHECK constraints keep values the model does not know out of the store.

CREATE TABLE jobs (
  id TEXT PRIMARY KEY NOT NULL,
  name TEXT NOT NULL,
  owner TEXT NOT NULL,
  state TEXT NOT NULL
    CHECK (state IN ('held', 'waiting', 'pending', 'running', 'succeeded', 'failed', 'cancelled')),
  priority INTEGER NOT NULL,
  held INTEGER NOT NULL CHECK (held IN (0, 1)),
  cancel_requested INTEGER NOT NULL CHECK (cancel_requested IN (0, 1)),
  created_at INTEGER NOT NULL,
  ended_at INTEGER,
  spec TEXT NOT NULL,
  inputs TEXT NOT NULL
);

CREATE INDEX jobs_created ON jobs (created_at, id);

CREATE TABLE tasks (
  job_id TEXT NOT NULL,
  idx INTEGER NOT NULL CHECK (idx >= 0),
  state TEXT NOT NULL
    CHECK (state IN ('held', 'waiting', 'pending', 'running', 'succeeded', 'failed', 'cancelled')),
  attempts INTEGER NOT NULL,
  failures INTEGER NOT NULL,
  losses INTEGER NOT NULL,
  not_before INTEGER,
  result_attempt INTEGER,
  checkpoint TEXT,
  PRIMARY KEY (job_id, idx)
) WITHOUT ROWID;

CREATE TABLE attempts (
  job_id TEXT NOT NULL,
  task_index INTEGER NOT NULL,
  number INTEGER NOT NULL CHECK (number >= 1),
  host TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('starting', 'running', 'stopping', 'ended')),
  outcome TEXT
    CHECK (outcome IS NULL
      OR outcome IN ('succeeded', 'failed', 'lost', 'preempted', 'migrated', 'cancelled', 'timed_out')),
  reason TEXT,
  exit_code INTEGER,
  restarted INTEGER NOT NULL CHECK (restarted IN (0, 1)),
  started_at INTEGER NOT NULL,
  ended_at INTEGER,
  PRIMARY KEY (job_id, task_index, number)
) WITHOUT ROWID;

CREATE TABLE events (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id TEXT NOT NULL,
  at INTEGER NOT NULL,
  kind TEXT NOT NULL,
  message TEXT NOT NULL
);

-- Serves both events(jobId), which reads in (at, id) order, and deleteJob.
CREATE INDEX events_job ON events (job_id, at, id);

CREATE TABLE hosts (
  name TEXT PRIMARY KEY NOT NULL,
  pool TEXT NOT NULL,
  state TEXT NOT NULL CHECK (state IN ('ready', 'draining', 'lost')),
  slots INTEGER NOT NULL,
  labels TEXT NOT NULL,
  facts TEXT NOT NULL,
  last_seen INTEGER NOT NULL
);

CREATE TABLE meta (
  key TEXT PRIMARY KEY NOT NULL,
  value TEXT NOT NULL
);

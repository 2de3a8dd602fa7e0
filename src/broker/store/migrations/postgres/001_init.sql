-- The first schema, the same tables as migrations/sqlite/001_init.sql. Ids, names and keys are
-- COLLATE "C" so that they sort by bytes, as SQLite's BINARY does, whatever the database's locale.
-- Times are milliseconds since the epoch (bigint). Nested values (the job file, labels, facts,
-- checkpoint) are `json`, which keeps the text as written (key order included) and only checks that
-- it is JSON: a round-trip gives back exactly what was stored.
-- No foreign keys: a batch may name a job's tasks before the job itself, and deleteJob removes the
-- children explicitly. CHECK constraints keep values the model does not know out of the store.

CREATE TABLE jobs (
  id text COLLATE "C" PRIMARY KEY,
  name text NOT NULL,
  owner text NOT NULL,
  state text NOT NULL
    CHECK (state IN ('held', 'waiting', 'pending', 'running', 'succeeded', 'failed', 'cancelled')),
  priority bigint NOT NULL,
  held boolean NOT NULL,
  cancel_requested boolean NOT NULL,
  created_at bigint NOT NULL,
  ended_at bigint,
  spec json NOT NULL,
  inputs json NOT NULL
);

CREATE INDEX jobs_created ON jobs (created_at, id);

CREATE TABLE tasks (
  job_id text COLLATE "C" NOT NULL,
  idx integer NOT NULL CHECK (idx >= 0),
  state text NOT NULL
    CHECK (state IN ('held', 'waiting', 'pending', 'running', 'succeeded', 'failed', 'cancelled')),
  attempts integer NOT NULL,
  failures integer NOT NULL,
  losses integer NOT NULL,
  not_before bigint,
  result_attempt integer,
  checkpoint json,
  PRIMARY KEY (job_id, idx)
);

CREATE TABLE attempts (
  job_id text COLLATE "C" NOT NULL,
  task_index integer NOT NULL,
  number integer NOT NULL CHECK (number >= 1),
  host text NOT NULL,
  state text NOT NULL CHECK (state IN ('starting', 'running', 'stopping', 'ended')),
  outcome text
    CHECK (outcome IS NULL
      OR outcome IN ('succeeded', 'failed', 'lost', 'preempted', 'migrated', 'cancelled', 'timed_out')),
  reason text,
  exit_code integer,
  restarted boolean NOT NULL,
  started_at bigint NOT NULL,
  ended_at bigint,
  PRIMARY KEY (job_id, task_index, number)
);

CREATE TABLE events (
  id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  job_id text COLLATE "C" NOT NULL,
  at bigint NOT NULL,
  kind text NOT NULL,
  message text NOT NULL
);

-- Serves both events(jobId), which reads in (at, id) order, and deleteJob.
CREATE INDEX events_job ON events (job_id, at, id);

CREATE TABLE hosts (
  name text COLLATE "C" PRIMARY KEY,
  pool text NOT NULL,
  state text NOT NULL CHECK (state IN ('ready', 'draining', 'lost')),
  slots integer NOT NULL,
  labels json NOT NULL,
  facts json NOT NULL,
  last_seen bigint NOT NULL
);

CREATE TABLE meta (
  key text COLLATE "C" PRIMARY KEY,
  value text NOT NULL
);

-- The same as migrations/sqlite/013_new_task_ranges.sql: a new job's untouched tasks as one row,
-- tasks 0 to count-1 in `state` wherever the tasks table has no row of that index.

CREATE TABLE new_tasks (
  job_id text COLLATE "C" PRIMARY KEY NOT NULL,
  state text NOT NULL
    CHECK (state IN ('held', 'waiting', 'pending', 'running', 'succeeded', 'failed', 'cancelled')),
  count bigint NOT NULL CHECK (count >= 0)
);

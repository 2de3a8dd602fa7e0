-- A new job's untouched tasks as one row: tasks 0 to count-1 of the job, each as a new task in
-- `state`, wherever the tasks table has no row of that index (a task's first change writes its
-- row). A million-task array is one row here instead of a million in tasks.

CREATE TABLE new_tasks (
  job_id TEXT PRIMARY KEY NOT NULL,
  state TEXT NOT NULL
    CHECK (state IN ('held', 'waiting', 'pending', 'running', 'succeeded', 'failed', 'cancelled')),
  count INTEGER NOT NULL CHECK (count >= 0)
);

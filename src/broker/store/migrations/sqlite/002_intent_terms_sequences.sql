-- The reshaped core: recorded intent (a task's migration target, an attempt's stop), attempts with a
-- placement (a list of host and rank), system failures counted apart from host losses, structured
-- events, the leadership term that fences a deposed server, and sequences that hand out job ids.

ALTER TABLE tasks ADD COLUMN system_failures INTEGER NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN migration TEXT;

-- Every attempt so far ran on one host, as rank 0.
ALTER TABLE attempts ADD COLUMN placement TEXT NOT NULL DEFAULT '[]';
UPDATE attempts SET placement = json_array(json_object('host', host, 'rank', 0));
ALTER TABLE attempts ADD COLUMN stop TEXT;

ALTER TABLE events ADD COLUMN data TEXT NOT NULL DEFAULT '{}';
-- Serves eventsAfter for one job.
CREATE INDEX events_job_id ON events (job_id, id);

-- One row: the newest term any server has taken or committed with.
CREATE TABLE leadership (
  id INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
  term INTEGER NOT NULL
);
INSERT INTO leadership (id, term) VALUES (1, 0);

CREATE TABLE sequences (
  name TEXT PRIMARY KEY NOT NULL,
  next INTEGER NOT NULL CHECK (next >= 1)
);
-- Job ids went on from the largest numeric id and the old in-memory counter's saved value.
INSERT INTO sequences (name, next)
SELECT 'job', max(
  1,
  coalesce((SELECT max(CAST(id AS INTEGER)) + 1 FROM jobs WHERE id NOT GLOB '*[^0-9]*' AND id <> ''), 1),
  coalesce((SELECT CAST(value AS INTEGER) FROM meta WHERE key = 'nextJobId'), 1)
);

-- The same changes as migrations/sqlite/002_intent_terms_sequences.sql: recorded intent (a task's
-- migration target, an attempt's stop), attempts with a placement (a list of host and rank), system
-- failures counted apart from host losses, structured events, the leadership term that fences a
-- deposed server, and sequences that hand out job ids.

ALTER TABLE tasks ADD COLUMN system_failures integer NOT NULL DEFAULT 0;
ALTER TABLE tasks ADD COLUMN migration json;

-- Every attempt so far ran on one host, as rank 0.
ALTER TABLE attempts ADD COLUMN placement json;
UPDATE attempts SET placement = json_build_array(json_build_object('host', host, 'rank', 0));
ALTER TABLE attempts ALTER COLUMN placement SET NOT NULL;
ALTER TABLE attempts ADD COLUMN stop json;

ALTER TABLE events ADD COLUMN data json NOT NULL DEFAULT '{}';
-- Serves eventsAfter for one job.
CREATE INDEX events_job_id ON events (job_id, id);

-- One row: the newest term any server has taken or committed with. Every commit locks it (FOR
-- UPDATE), so commits are serialized and event ids grow in commit order.
CREATE TABLE leadership (
  id integer PRIMARY KEY CHECK (id = 1),
  term bigint NOT NULL
);
INSERT INTO leadership (id, term) VALUES (1, 0);

CREATE TABLE sequences (
  name text COLLATE "C" PRIMARY KEY,
  next bigint NOT NULL CHECK (next >= 1)
);
-- Job ids went on from the largest numeric id and the old in-memory counter's saved value.
INSERT INTO sequences (name, next)
SELECT 'job', greatest(
  1,
  coalesce((SELECT max(id::bigint) + 1 FROM jobs WHERE id ~ '^[0-9]{1,18}$'), 1),
  coalesce((SELECT value::bigint FROM meta WHERE key = 'nextJobId' AND value ~ '^[0-9]{1,18}$'), 1)
);

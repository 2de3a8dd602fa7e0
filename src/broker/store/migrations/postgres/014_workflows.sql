-- The same as migrations/sqlite/011_workflows.sql: workflows with their jobs by name and the edges
-- between them, and each job's workflow ({id, name}) when it was made in one.

CREATE TABLE workflows (
  id text COLLATE "C" PRIMARY KEY NOT NULL,
  name text,
  owner text NOT NULL,
  created_at bigint NOT NULL,
  jobs json NOT NULL,
  submit_key text
);

ALTER TABLE jobs ADD COLUMN workflow json;

-- Workflows: named jobs made together in one commit from one file. A workflow keeps its jobs by
-- name with the edges between them (JSON: [{name, job, dependsOn: [{name, when, sameTasks}]}]);
-- each job made in one names its workflow and its name there (JSON: {id, name}).

CREATE TABLE workflows (
  id TEXT PRIMARY KEY NOT NULL,
  name TEXT,
  owner TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  jobs TEXT NOT NULL,
  submit_key TEXT
);

ALTER TABLE jobs ADD COLUMN workflow TEXT;

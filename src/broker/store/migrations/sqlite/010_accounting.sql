-- Usage accounting: what each attempt used ({wallSeconds, userSeconds, systemSeconds,
-- peakMemoryMb}, JSON, as its agent measured it), and the ended attempts of removed jobs, kept for
-- `steward acct` until the server's --accounting-days have passed since their end. A removal
-- copies the job's ended attempts here in the same transaction that deletes them.

ALTER TABLE attempts ADD COLUMN usage TEXT;

CREATE TABLE accounting (
  job_id TEXT NOT NULL,
  job_name TEXT NOT NULL,
  owner TEXT NOT NULL,
  task_index INTEGER NOT NULL CHECK (task_index >= 0),
  number INTEGER NOT NULL CHECK (number >= 1),
  host TEXT NOT NULL,
  outcome TEXT,
  exit_code INTEGER,
  started_at INTEGER NOT NULL,
  ended_at INTEGER NOT NULL,
  usage TEXT,
  PRIMARY KEY (job_id, task_index, number)
) WITHOUT ROWID;

CREATE INDEX accounting_ended ON accounting (ended_at);
CREATE INDEX attempts_ended ON attempts (ended_at) WHERE ended_at IS NOT NULL;

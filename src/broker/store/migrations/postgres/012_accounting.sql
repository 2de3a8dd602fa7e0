-- Usage accounting: what each attempt used ({wallSeconds, userSeconds, systemSeconds,
-- peakMemoryMb}, JSON, as its agent measured it), and the ended attempts of removed jobs, kept for
-- `steward acct` until the server's --accounting-days have passed since their end. A removal
-- copies the job's ended attempts here in the same transaction that deletes them.

ALTER TABLE attempts ADD COLUMN usage json;

CREATE TABLE accounting (
  job_id text COLLATE "C" NOT NULL,
  job_name text NOT NULL,
  owner text NOT NULL,
  task_index integer NOT NULL CHECK (task_index >= 0),
  number integer NOT NULL CHECK (number >= 1),
  host text NOT NULL,
  outcome text,
  exit_code integer,
  started_at bigint NOT NULL,
  ended_at bigint NOT NULL,
  usage json,
  PRIMARY KEY (job_id, task_index, number)
);

CREATE INDEX accounting_ended ON accounting (ended_at);
CREATE INDEX attempts_ended ON attempts (ended_at) WHERE ended_at IS NOT NULL;

-- The client's key for a submit (Idempotency-Key): a submit repeated with the same key by the same
-- owner finds the job it created instead of making a second one.

ALTER TABLE jobs ADD COLUMN submit_key TEXT;
CREATE UNIQUE INDEX jobs_submit_key ON jobs (owner, submit_key) WHERE submit_key IS NOT NULL;

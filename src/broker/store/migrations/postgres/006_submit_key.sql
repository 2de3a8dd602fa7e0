-- The same as migrations/sqlite/004_submit_key.sql: the client's key for a submit
-- (Idempotency-Key), so a submit repeated with the same key by the same owner finds its job.

ALTER TABLE jobs ADD COLUMN submit_key text;
CREATE UNIQUE INDEX jobs_submit_key ON jobs (owner, submit_key) WHERE submit_key IS NOT NULL;

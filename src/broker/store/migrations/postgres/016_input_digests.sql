-- The same as migrations/sqlite/014_input_digests.sql: the SHA-256 of each uploaded input of a job
-- (JSON: {path: hex}), for the scheduler's data affinity; NULL for a job submitted to an earlier version.

ALTER TABLE jobs ADD COLUMN input_digests json;

-- The same as migrations/sqlite/005_pilot_walltime.sql: a pilot's walltime end (ms since the
-- epoch), so the server places only work that fits before it and moves its tasks away in time.

ALTER TABLE hosts ADD COLUMN ends_at bigint;

-- A pilot's walltime end (ms since the epoch, its agent's --ends-at): the server places only work
-- that fits before it, and moves the pilot's tasks away before it comes.

ALTER TABLE hosts ADD COLUMN ends_at INTEGER;

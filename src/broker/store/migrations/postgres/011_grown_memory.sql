-- The same as migrations/sqlite/009_grown_memory.sql: the memory a task's next attempts take, and
-- the memory an attempt was given, when a retry after running out of memory grew it; NULL: the job's.

ALTER TABLE tasks ADD COLUMN memory_mb integer;
ALTER TABLE attempts ADD COLUMN memory_mb integer;

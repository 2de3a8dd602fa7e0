-- The memory a task's next attempts take, and the memory an attempt was given, when a retry after
-- running out of memory grew it (retry.memoryGrowth); NULL: the job's.

ALTER TABLE tasks ADD COLUMN memory_mb INTEGER;
ALTER TABLE attempts ADD COLUMN memory_mb INTEGER;

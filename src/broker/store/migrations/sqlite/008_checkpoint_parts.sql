-- Committed checkpoint manifests as records: a single-host task's generations (rank 0), and each
-- rank's part of a multi-node task's generations. Which generations exist, which one is complete
-- and which go are then known from the store, not from listing blobs. The files of each part are
-- JSON ({path, sha256, bytes}); their objects stay blobs. A store of an earlier version has its
-- manifests as blobs only: the server reads those once at start (server/legacy-checkpoints.ts).

CREATE TABLE checkpoint_parts (
  job_id TEXT NOT NULL,
  task_index INTEGER NOT NULL CHECK (task_index >= 0),
  rank INTEGER NOT NULL CHECK (rank >= 0),
  generation INTEGER NOT NULL CHECK (generation >= 1),
  attempt INTEGER NOT NULL CHECK (attempt >= 1),
  files TEXT NOT NULL,
  bytes INTEGER NOT NULL CHECK (bytes >= 0),
  at INTEGER NOT NULL,
  PRIMARY KEY (job_id, task_index, rank, generation)
) WITHOUT ROWID;

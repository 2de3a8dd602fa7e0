-- Committed checkpoint manifests as records: a single-host task's generations (rank 0), and each
-- rank's part of a multi-node task's generations. Which generations exist, which one is complete
-- and which go are then known from the store, not from listing blobs. The files of each part are
-- JSON ({path, sha256, bytes}); their objects stay blobs. A store of an earlier version has its
-- manifests as blobs only: the server reads those once at start (server/legacy-checkpoints.ts).

CREATE TABLE checkpoint_parts (
  job_id text COLLATE "C" NOT NULL,
  task_index integer NOT NULL CHECK (task_index >= 0),
  rank integer NOT NULL CHECK (rank >= 0),
  generation bigint NOT NULL CHECK (generation >= 1),
  attempt integer NOT NULL CHECK (attempt >= 1),
  files json NOT NULL,
  bytes bigint NOT NULL CHECK (bytes >= 0),
  at bigint NOT NULL,
  PRIMARY KEY (job_id, task_index, rank, generation)
);

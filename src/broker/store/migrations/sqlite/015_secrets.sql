-- Users' secrets (steward secret set): S3 credentials a job names by `credentials: NAME`, kept as
-- given (JSON: accessKeyId, secretAccessKey, sessionToken?, region?, endpoint?) since the agent
-- signs with them; a user's own, by name.

CREATE TABLE secrets (
  owner TEXT NOT NULL,
  name TEXT NOT NULL,
  value TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  PRIMARY KEY (owner, name)
);

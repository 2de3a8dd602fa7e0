-- The same as migrations/sqlite/015_secrets.sql: users' secrets (S3 credentials a job names by
-- `credentials: NAME`), kept as given, by owner and name.

CREATE TABLE secrets (
  owner text NOT NULL,
  name text NOT NULL,
  value json NOT NULL,
  created_at bigint NOT NULL,
  updated_at bigint NOT NULL,
  PRIMARY KEY (owner, name)
);

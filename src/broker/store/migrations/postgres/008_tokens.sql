-- The same as migrations/sqlite/006_tokens.sql: API tokens with a role, join tokens per pool and
-- host credentials, each kept as a hash of its secret.

CREATE TABLE tokens (
  id text PRIMARY KEY NOT NULL,
  kind text NOT NULL CHECK (kind IN ('api', 'join', 'host')),
  subject text NOT NULL,
  role text CHECK (role IN ('admin', 'user', 'reader')),
  pool text,
  parent text,
  hash text NOT NULL,
  created_at bigint NOT NULL,
  created_by text NOT NULL,
  expires_at bigint,
  revoked_at bigint
);

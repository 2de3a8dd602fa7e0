-- Tokens the server gave out (issue: users, tokens and roles): API tokens with a role, join tokens
-- per pool, and host credentials. Only a hash of each secret is kept.

CREATE TABLE tokens (
  id TEXT PRIMARY KEY NOT NULL,
  kind TEXT NOT NULL CHECK (kind IN ('api', 'join', 'host')),
  subject TEXT NOT NULL,
  role TEXT CHECK (role IN ('admin', 'user', 'reader')),
  pool TEXT,
  parent TEXT,
  hash TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  created_by TEXT NOT NULL,
  expires_at INTEGER,
  revoked_at INTEGER
);

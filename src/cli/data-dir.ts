// The data folder of `steward up` and `steward server`: the SQLite database, the blobs, the tokens.
// With a PostgreSQL store the records live there instead, and the folder keeps the blobs and tokens.

import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Logger } from "pino";
import { newToken } from "../server/auth.ts";
import type { ServerOptions } from "../server/server.ts";
import { DiskBlobStore } from "../store/disk-blobs.ts";
import { PostgresStore } from "../store/postgres.ts";
import { SqliteStore } from "../store/sqlite.ts";
import type { Store } from "../store/store.ts";

export interface DataDir {
  root: string;
  store: Store;
  blobs: DiskBlobStore;
  adminToken: string;
  joinToken: string;
}

/** A token given on the command line wins; otherwise the one kept in the folder, or a new one. */
export function tokenFile(root: string, name: string, given: string | undefined): string {
  const path = join(root, name);
  if (given) {
    writeFileSync(path, `${given}\n`, { mode: 0o600 });
    return given;
  }
  if (existsSync(path)) return readFileSync(path, "utf8").trim();
  const token = newToken();
  writeFileSync(path, `${token}\n`, { mode: 0o600 });
  return token;
}

/** `storeUrl` (postgres://...) puts the records in PostgreSQL; without it they are in DIR/steward.db. */
export function openDataDir(
  dir: string,
  tokens: { admin?: string; join?: string },
  storeUrl?: string,
): DataDir {
  const root = resolve(dir);
  mkdirSync(root, { recursive: true });
  return {
    root,
    store: storeUrl ? new PostgresStore(storeUrl) : new SqliteStore(join(root, "steward.db")),
    blobs: new DiskBlobStore(join(root, "blobs")),
    adminToken: tokenFile(root, "admin-token", tokens.admin),
    joinToken: tokenFile(root, "join-token", tokens.join),
  };
}

/** The server's options from a data folder and the flags `up` and `server` share. */
export function serverOptions(
  data: DataDir,
  flags: { host?: string; port: number; heartbeatSeconds: number; hostTimeoutSeconds: number },
  log: Logger,
): ServerOptions {
  return {
    store: data.store,
    blobs: data.blobs,
    host: flags.host,
    port: flags.port,
    adminToken: data.adminToken,
    joinToken: data.joinToken,
    heartbeatSeconds: flags.heartbeatSeconds,
    hostTimeoutSeconds: flags.hostTimeoutSeconds,
    log,
  };
}

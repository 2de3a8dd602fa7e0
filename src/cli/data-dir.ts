// The data folder of `steward up` and `steward server`: the SQLite database, the blobs, the tokens.

import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { newToken } from "../server/auth.ts";
import { DiskBlobStore } from "../store/disk-blobs.ts";
import { SqliteStore } from "../store/sqlite.ts";

export interface DataDir {
  root: string;
  store: SqliteStore;
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

export function openDataDir(dir: string, tokens: { admin?: string; join?: string }): DataDir {
  const root = resolve(dir);
  mkdirSync(root, { recursive: true });
  return {
    root,
    store: new SqliteStore(join(root, "steward.db")),
    blobs: new DiskBlobStore(join(root, "blobs")),
    adminToken: tokenFile(root, "admin-token", tokens.admin),
    joinToken: tokenFile(root, "join-token", tokens.join),
  };
}

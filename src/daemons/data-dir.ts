// The data folder of `steward up` and `steward server`: the SQLite database, the blobs, the tokens.
// With a PostgreSQL store the records live there instead, and so do the blobs (every broker on the
// store reaches them), unless --blobs names a folder on a file system the brokers share; the data
// folder then keeps the tokens. The data folder and a --blobs folder are the broker's account's
// alone (private-folder.ts).

import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import type { Logger } from "pino";
import { newToken } from "../broker/api/auth.ts";
import { DEFAULT_SUBMIT_BURST, DEFAULT_SUBMIT_RATE } from "../broker/api/rate-limit.ts";
import { AdvertiseUrlError, parseAdvertiseUrl } from "../broker/server/advertise-url.ts";
import type { ServerOptions } from "../broker/server/server.ts";
import type { BlobStore } from "../broker/store/blobs.ts";
import { DiskBlobStore } from "../broker/store/disk-blobs.ts";
import { PostgresStore } from "../broker/store/postgres.ts";
import { PostgresBlobStore } from "../broker/store/postgres-blobs.ts";
import { SqliteStore } from "../broker/store/sqlite.ts";
import type { Store } from "../broker/store/store.ts";
import { CliError } from "../common/command-line/cli-error.ts";
import { type FairShareFlags, fairShareFrom } from "./fair-share-flags.ts";
import { type PolicyFlags, policyFrom } from "./options.ts";
import { BLOBS_FOLDER, DATA_FOLDER, privateFolder } from "./private-folder.ts";

export interface DataDir {
  root: string;
  store: Store;
  blobs: BlobStore;
  /** Where the blobs are, for the start-up banner: a folder, or "PostgreSQL". */
  blobsWhere: string;
  adminToken: string;
  joinToken: string;
  /** What was tightened at start (folders an older Steward left readable by others), for the log. */
  notices: string[];
  /** Closes what the folder opened besides the store (the server closes the store). */
  close(): Promise<void>;
}

/** A token given on the command line wins; otherwise the one kept in the folder, or a new one. */
function tokenFile(root: string, name: string, given: string | undefined): string {
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

/**
 * `storeUrl` (postgres://...) puts the records in PostgreSQL; without it they are in DIR/steward.db.
 * The blobs go to `blobsDir` when given; otherwise to PostgreSQL with a PostgreSQL store, to
 * DIR/blobs without one.
 */
export function openDataDir(
  dir: string,
  tokens: { admin?: string; join?: string },
  storeUrl?: string,
  blobsDir?: string,
): DataDir {
  const data = privateFolder(resolve(dir), DATA_FOLDER);
  const root = data.path;
  const notices = data.tightened ? [data.tightened] : [];
  let blobsRoot: string | undefined;
  if (blobsDir !== undefined) {
    const blobsFolder = privateFolder(resolve(blobsDir), BLOBS_FOLDER);
    blobsRoot = blobsFolder.path;
    if (blobsFolder.tightened) notices.push(blobsFolder.tightened);
  }
  const blobs = chooseBlobs(root, storeUrl, blobsRoot);
  return {
    notices,
    root,
    store: storeUrl ? new PostgresStore(storeUrl) : new SqliteStore(join(root, "steward.db")),
    blobs,
    blobsWhere: blobs instanceof DiskBlobStore ? blobs.root : "PostgreSQL, beside the records",
    adminToken: tokenFile(root, "admin-token", tokens.admin),
    joinToken: tokenFile(root, "join-token", tokens.join),
    close: async () => {
      if (blobs instanceof PostgresBlobStore) await blobs.close();
    },
  };
}

function chooseBlobs(root: string, storeUrl: string | undefined, blobsDir: string | undefined): BlobStore {
  if (blobsDir !== undefined) return new DiskBlobStore(blobsDir);
  if (storeUrl) return new PostgresBlobStore(storeUrl);
  return new DiskBlobStore(join(root, "blobs"));
}

/** The server's options from a data folder and the flags `up` and `server` share. */
export function serverOptions(
  data: DataDir,
  flags: {
    host?: string;
    advertiseUrl?: string;
    port: number;
    heartbeatSeconds: number;
    hostTimeoutSeconds: number;
    leaseSeconds?: number;
    tlsCert?: string;
    tlsKey?: string;
    maxUploadMb?: number;
    maxLogMb?: number;
    bodyTimeoutSeconds?: number;
    submitRate?: number;
    submitBurst?: number;
    metricsOpen?: boolean;
    accountingDays?: number;
  } & PolicyFlags &
    Partial<FairShareFlags>,
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
    policy: policyFrom(flags),
    leaseSeconds: flags.leaseSeconds,
    maxUploadMb: flags.maxUploadMb,
    maxLogMb: flags.maxLogMb,
    bodyTimeoutSeconds: flags.bodyTimeoutSeconds,
    metricsOpen: flags.metricsOpen === true,
    accountingDays: flags.accountingDays,
    ...(flags.fairShareHalfLife === undefined
      ? {}
      : { fairShare: fairShareFrom({ shares: flags.shares, fairShareHalfLife: flags.fairShareHalfLife }) }),
    backupFiles: [join(data.root, "admin-token"), join(data.root, "join-token")],
    ...(flags.submitRate !== undefined || flags.submitBurst !== undefined
      ? {
          submitLimit: {
            ratePerSecond: flags.submitRate ?? DEFAULT_SUBMIT_RATE,
            burst: flags.submitBurst ?? DEFAULT_SUBMIT_BURST,
          },
        }
      : {}),
    ...(flags.tlsCert || flags.tlsKey ? { tls: readTls(flags.tlsCert, flags.tlsKey) } : {}),
    ...(flags.advertiseUrl === undefined
      ? {}
      : { advertiseUrl: checkedAdvertiseUrl(flags.advertiseUrl, flags.tlsCert !== undefined, flags.host) }),
    log,
  };
}

/** `--advertise-url`, checked before anything starts (a bad one stops the start with the reason). */
function checkedAdvertiseUrl(text: string, tls: boolean, host: string | undefined): string {
  try {
    return parseAdvertiseUrl(text, { tls, listenHost: host ?? "127.0.0.1" });
  } catch (error) {
    if (error instanceof AdvertiseUrlError) throw new CliError(error.message);
    throw error;
  }
}

/** `--tls-cert` and `--tls-key` come together; the files are read now, so a bad path stops the start. */
function readTls(certPath: string | undefined, keyPath: string | undefined): { cert: string; key: string } {
  if (!certPath || !keyPath) throw new CliError("--tls-cert and --tls-key go together");
  const read = (flag: string, path: string) => {
    try {
      return readFileSync(path, "utf8");
    } catch (error) {
      throw new CliError(`${flag} ${path}: ${(error as Error).message}`);
    }
  };
  return { cert: read("--tls-cert", certPath), key: read("--tls-key", keyPath) };
}

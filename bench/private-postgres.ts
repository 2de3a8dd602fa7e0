// A PostgreSQL cluster of the benchmark's own (initdb in a temporary folder, its own port on
// 127.0.0.1), so that a "database restart" is a real one: `pg_ctl stop -m immediate` (the server
// dies as on a crash: every connection cut, crash recovery at the next start), down for a while,
// then `pg_ctl start`. The shared server of the tests (127.0.0.1:5432) is never touched. It runs
// as the `postgres` account (initdb refuses root) through `runuser`; where that cannot be done,
// startPrivatePostgres says why and the caller falls back to something else.

import { execFileSync } from "node:child_process";
import { chownSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import pg from "pg";
import { freePort, track } from "./steward-process.ts";

const BIN_DIRS = ["/usr/lib/postgresql/17/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/15/bin"];
const ACCOUNT = "postgres";

export interface PrivatePostgres {
  /** postgres://postgres@127.0.0.1:PORT/postgres */
  url: string;
  port: number;
  /** A restart as after a crash: stopped with `-m immediate`, down `downMs`, started again. */
  restart(downMs: number): Promise<void>;
  /** The bytes of a schema's tables, their indexes and TOAST (what the store holds on disk). */
  schemaBytes(schema: string): Promise<number>;
  stop(): void;
}

function binary(name: string): string {
  for (const dir of BIN_DIRS) {
    try {
      execFileSync("test", ["-x", join(dir, name)]);
      return join(dir, name);
    } catch {}
  }
  return name;
}

function asPostgres(command: string, args: string[]): string {
  return execFileSync("runuser", ["-u", ACCOUNT, "--", binary(command), ...args], {
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
  });
}

/** Reads one number from the cluster on a connection of its own. */
async function queryNumber(url: string, sql: string, values: unknown[]): Promise<number> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 5000 });
  // A connection cut by a restart fails the query, not the process (an unhandled 'error' event).
  client.on("error", () => {});
  await client.connect();
  try {
    const result = await client.query(sql, values);
    return Number(Object.values(result.rows[0] as Record<string, unknown>)[0] ?? 0);
  } finally {
    await client.end();
  }
}

/** A fresh cluster, started; or the reason it cannot be made here. */
export async function startPrivatePostgres(): Promise<PrivatePostgres | { unavailable: string }> {
  if (process.getuid?.() !== 0)
    return { unavailable: "a private PostgreSQL cluster is made as root (runuser)" };
  const root = mkdtempSync(join(tmpdir(), "steward-bench-pg-"));
  const data = join(root, "data");
  const port = await freePort();
  const options = `-p ${port} -k ${root} -c listen_addresses=127.0.0.1 -c max_connections=200`;
  const start = () =>
    asPostgres("pg_ctl", ["-D", data, "-o", options, "-l", join(root, "log"), "-w", "start"]);
  try {
    chownSync(root, Number(execFileSync("id", ["-u", ACCOUNT], { encoding: "utf8" }).trim()), 0);
    asPostgres("initdb", ["-D", data, "-A", "trust", "-U", ACCOUNT, "--no-sync"]);
    start();
  } catch (error) {
    rmSync(root, { recursive: true, force: true });
    const stderr = (error as { stderr?: string }).stderr?.trim();
    return { unavailable: `initdb/pg_ctl as ${ACCOUNT} failed: ${stderr || (error as Error).message}` };
  }
  const url = `postgres://${ACCOUNT}@127.0.0.1:${port}/postgres`;
  let stopped = false;
  // Stopped with the benchmark's processes after a failure or a signal too.
  const untrack = track({ stop: async () => stop(), stopSync: () => stop() });
  const stop = () => {
    if (stopped) return;
    stopped = true;
    untrack();
    try {
      asPostgres("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
    } catch {}
    rmSync(root, { recursive: true, force: true });
  };
  return {
    url,
    port,
    async restart(downMs) {
      asPostgres("pg_ctl", ["-D", data, "-m", "immediate", "-w", "stop"]);
      await sleep(downMs);
      start();
    },
    schemaBytes: (schema) =>
      queryNumber(
        url,
        `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) AS bytes FROM pg_class c
           JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind IN ('r', 'm')`,
        [schema],
      ),
    stop,
  };
}

// The PostgreSQL server of the tests (STEWARD_TEST_PG_URL): reach it, make and drop schemas, and say
// whether it is there, so that a file can skip its PostgreSQL tests (or fail them under CI=true).

import { randomBytes } from "node:crypto";
import pg from "pg";

export const PG_URL = process.env.STEWARD_TEST_PG_URL ?? "postgres://postgres@127.0.0.1:5432/test";
/** The URL without its password, for messages. */
export const SAFE_PG_URL = PG_URL.replace(/\/\/([^:@/]*):[^@/]*@/, "//$1:***@");

/** Runs statements on a connection of its own, outside any store (set-up, inspection, clean-up). */
export async function onPostgres<T>(work: (client: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: PG_URL, connectionTimeoutMillis: 5_000 });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

/** Null when the server answers, otherwise why not. */
export async function postgresUnreachable(): Promise<string | null> {
  try {
    await onPostgres((client) => client.query("SELECT 1"));
    return null;
  } catch (error) {
    return (error as Error).message || String(error);
  }
}

export function freshSchema(prefix = "steward_test"): string {
  return `${prefix}_${randomBytes(6).toString("hex")}`;
}

export async function dropSchema(schema: string): Promise<void> {
  await onPostgres((client) => client.query(`DROP SCHEMA IF EXISTS ${pg.escapeIdentifier(schema)} CASCADE`));
}

/** PG_URL with `?schema=` set: the form `steward server --store` takes. */
export function urlWithSchema(schema: string): string {
  const url = new URL(PG_URL);
  url.searchParams.set("schema", schema);
  return url.toString();
}

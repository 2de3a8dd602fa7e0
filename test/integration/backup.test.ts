// Backup and restore of a running `steward up` (SQLite store): `steward admin backup FILE` while a
// job runs, then `steward server --restore FILE` into a new folder, which lists the same jobs with
// their outputs fetchable. Also: a non-empty folder is refused, a non-admin gets 403, a PostgreSQL
// store answers 501 with the way to back it up.

import { execFileSync } from "node:child_process";
import { mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Job } from "../../src/common/api/jobs.ts";
import { dropSchema, freshSchema, postgresUnreachable, urlWithSchema } from "../helpers/postgres.ts";
import {
  api,
  cleanup,
  cli,
  type StewardProcess,
  startServerProcess,
  startUp,
  tempDir,
  waitFor,
} from "../helpers/steward.ts";

let steward: StewardProcess;
let work: string;

beforeAll(async () => {
  steward = await startUp({ agents: 1, slots: 2 });
  work = tempDir("steward-backup-");
});

afterAll(async () => {
  await steward?.stop();
  cleanup(steward?.data, work);
});

function jobFile(name: string, content: string, files: Record<string, string> = {}): string {
  const folder = join(work, name);
  mkdirSync(folder, { recursive: true });
  for (const [path, text] of Object.entries(files)) writeFileSync(join(folder, path), text);
  const path = join(folder, "job.yaml");
  writeFileSync(path, content);
  return path;
}

async function submit(server: { url: string; token: string }, file: string): Promise<string> {
  const submitted = await cli(server, ["submit", file]);
  expect(submitted.code, submitted.stderr).toBe(0);
  return submitted.stdout.trim();
}

describe("backup and restore", () => {
  it("restores a running server's jobs, outputs and tokens into a new folder", async () => {
    const done: string[] = [];
    for (const n of [1, 2, 3]) {
      const file = jobFile(
        `out-${n}`,
        [
          `name: out-${n}`,
          `command: "cat numbers > total; echo ${n} >> total"`,
          "inputs: [numbers]",
          "outputs: [total]",
        ].join("\n"),
        { numbers: `${"x".repeat(1000 * n)}\n` },
      );
      done.push(await submit(steward, file));
    }
    for (const id of done) expect((await cli(steward, ["wait", id, "--timeout", "60"])).code).toBe(0);
    // An output deeper than ustar's 100-byte names: the archive carries it in a PAX record.
    const deep = `${"deep-folder-name/".repeat(8)}result.txt`;
    const long = await submit(
      steward,
      jobFile(
        "deep",
        [
          `name: deep`,
          `command: "mkdir -p $(dirname ${deep}) && echo deep > ${deep}"`,
          `outputs: [${deep}]`,
        ].join("\n"),
      ),
    );
    expect((await cli(steward, ["wait", long, "--timeout", "60"])).code).toBe(0);
    const running = await submit(steward, jobFile("long", 'name: long\ncommand: "sleep 300"'));
    await waitFor(
      "the long job to run",
      async () => ((await api(steward, "GET", `/api/v1/jobs/${running}`)) as Job).state === "running",
    );

    const archive = join(work, "grid.tar.gz");
    const backedUp = await cli(steward, ["admin", "backup", archive]);
    expect(backedUp.code, backedUp.stderr).toBe(0);
    expect(statSync(archive).mode & 0o777).toBe(0o600);

    // A plain tar.gz that tar itself reads, with the long name whole.
    const listing = execFileSync("tar", ["tzf", archive], { encoding: "utf8" }).split("\n");
    expect(listing.slice(0, 2)).toEqual(["steward-backup.json", "steward.db"]);
    expect(listing.some((name) => name.startsWith("blobs/") && name.endsWith(deep))).toBe(true);

    // A folder with something in it is not restored into.
    const refused = await cli(null, ["server", "--restore", archive, "--data", steward.data, "--port", "1"]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain("is not empty");

    const before = (await api(steward, "GET", "/api/v1/jobs?all=1")) as Job[];
    const data = join(work, "restored");
    const restored = await startServerProcess({ data, args: ["--restore", archive] });
    try {
      // The start tokens came with it: the old admin token works on the new server.
      expect(restored.token).toBe(steward.token);
      expect(restored.joinToken).toBe(readFileSync(join(steward.data, "join-token"), "utf8").trim());
      const after = (await api(restored, "GET", "/api/v1/jobs?all=1")) as Job[];
      expect(after.map((job) => [job.id, job.name])).toEqual(before.map((job) => [job.id, job.name]));
      for (const id of done) {
        const job = after.find((each) => each.id === id);
        expect(job?.state).toBe("succeeded");
        const out = join(work, `fetched-${id}`);
        const fetched = await cli(restored, ["fetch", id, "--to", out]);
        expect(fetched.code, fetched.stderr).toBe(0);
        const original = join(work, `original-${id}`);
        expect((await cli(steward, ["fetch", id, "--to", original])).code).toBe(0);
        expect(readFileSync(join(out, "total"), "utf8")).toBe(readFileSync(join(original, "total"), "utf8"));
      }
      const deepOut = join(work, "fetched-deep");
      expect((await cli(restored, ["fetch", long, "--to", deepOut])).code).toBe(0);
      expect(readFileSync(join(deepOut, deep), "utf8")).toBe("deep\n");
      // The job that ran at the backup is there too (its host is not: it is lost, and the job rescheduled).
      expect(after.find((job) => job.id === running)).toBeDefined();
    } finally {
      await restored.stop();
      cleanup(data);
    }
    await api(steward, "POST", `/api/v1/jobs/${running}/cancel`, {});
  });

  it("lets deletions go on once a client walks away from a backup", async () => {
    const id = await submit(steward, jobFile("gone", 'name: gone\ncommand: "echo hi"'));
    expect((await cli(steward, ["wait", id, "--timeout", "60"])).code).toBe(0);
    const abort = new AbortController();
    const answer = await fetch(`${steward.url}/api/v1/admin/backup`, {
      method: "POST",
      headers: { authorization: `Bearer ${steward.token}` },
      signal: abort.signal,
    });
    expect(answer.status).toBe(200);
    abort.abort();
    // The removal deletes the job's files: it would wait forever on a backup never finished.
    const removed = await cli(steward, ["rm", id]);
    expect(removed.code, removed.stderr).toBe(0);
  });

  it("is for admins only", async () => {
    const created = (await api(steward, "POST", "/api/v1/tokens", { user: "ann", role: "user" })) as {
      token: string;
    };
    const answer = await fetch(`${steward.url}/api/v1/admin/backup`, {
      method: "POST",
      headers: { authorization: `Bearer ${created.token}` },
    });
    expect(answer.status).toBe(403);
  });

  it("answers 501 on a PostgreSQL store, naming pg_dump", async (context) => {
    const unreachable = await postgresUnreachable();
    if (unreachable && process.env.CI) throw new Error(`PostgreSQL unreachable: ${unreachable}`);
    if (unreachable) return context.skip(unreachable);
    const schema = freshSchema();
    const server = await startServerProcess({ args: ["--store", urlWithSchema(schema)] });
    try {
      const answer = await fetch(`${server.url}/api/v1/admin/backup`, {
        method: "POST",
        headers: { authorization: `Bearer ${server.token}` },
      });
      expect(answer.status).toBe(501);
      expect(((await answer.json()) as { error: { message: string } }).error.message).toContain("pg_dump");
    } finally {
      await server.stop();
      cleanup(server.data);
      await dropSchema(schema);
    }
  });
});

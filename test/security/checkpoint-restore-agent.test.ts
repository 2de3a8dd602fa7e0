// Issue 22, item 2, on the agent: a restarted attempt gets its checkpoint back from the manifest
// the server answers (GET .../checkpoint) before the job starts, written by the agent, as root on a
// run-as host. The agent checks the manifest itself, whatever server answered it (one of before
// the check, or one whose store was tampered with): a path that could leave the folder, or one
// named twice, refuses the whole checkpoint before a byte is written. And it writes without
// following links: a link found in the checkpoint folder is refused, never written through.
// The server here is a stand-in on loopback that answers what a tampered store would; the agent's
// restore code (CheckpointSync) is the real one, writing into a real folder.

import { createHash } from "node:crypto";
import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { CheckpointSync } from "../../src/agent/files/checkpoint.ts";
import { HttpClient } from "../../src/common/transport/http-client.ts";
import { cleanup, tempDir } from "../helpers/steward.ts";

const JOB = "j-restore";
const sha = (text: string) => createHash("sha256").update(text).digest("hex");
const CONTENT = "restored state\n";

/** What the stand-in answers for the checkpoint: set by each test. */
let manifest: { files: { path: string; sha256: string; bytes: number }[] } = { files: [] };
/** Objects the agent fetched: none, when it refuses a manifest before writing. */
let fetched = 0;
let server: Server;
let url: string;

const root = tempDir("steward-restore-");
let dir: string;
let outside: string;
let runs = 0;

beforeAll(async () => {
  server = createServer((request, response) => {
    const path = request.url ?? "";
    if (path === `/api/v1/agent/jobs/${JOB}/tasks/0/checkpoint`) {
      response.setHeader("content-type", "application/json");
      response.end(JSON.stringify(manifest));
      return;
    }
    if (path === `/api/v1/agent/jobs/${JOB}/tasks/0/checkpoint/objects/${sha(CONTENT)}`) {
      fetched++;
      response.setHeader("content-type", "application/octet-stream");
      response.end(CONTENT);
      return;
    }
    response.statusCode = 404;
    response.end("{}");
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  cleanup(root);
});

beforeEach(() => {
  // A fresh attempt folder each time, with a folder beside it that nothing may reach.
  const run = join(root, `run-${++runs}`);
  dir = join(run, "attempts", "j.0.2", "checkpoint");
  outside = join(run, "outside");
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  mkdirSync(outside);
  writeFileSync(join(outside, "victim"), "intact\n");
  manifest = { files: [] };
  fetched = 0;
});

function restore(): Promise<number | null> {
  const sync = new CheckpointSync({
    http: new HttpClient({ baseUrl: () => url, token: () => "token" }),
    jobId: JOB,
    taskIndex: 0,
    attempt: 2,
    dir,
  });
  return sync.restore();
}

const file = (path: string) => ({ path, sha256: sha(CONTENT), bytes: Buffer.byteLength(CONTENT) });

/** The outside folder holds its victim, untouched, and nothing else. */
function expectOutsideUntouched(): void {
  expect(readdirSync(outside)).toEqual(["victim"]);
  expect(readFileSync(join(outside, "victim"), "utf8")).toBe("intact\n");
}

describe("the agent refuses a manifest whose paths could leave the checkpoint folder", () => {
  const refused: [string, string[], string][] = [
    ["a path up and out", ["state", "../../../../outside/pwned"], "files[1].path"],
    [
      "a path up and out, as deep as the root",
      ["state", `${"../".repeat(40)}OUTSIDE/pwned`],
      "files[1].path",
    ],
    ["an absolute path", ["state", "/OUTSIDE/pwned"], "files[1].path"],
    ["a NUL", ["state", "b\0"], "files[1].path"],
    ["a path named twice", ["state", "state"], "files[1].path"],
  ];
  for (const [what, paths, field] of refused) {
    it(`refuses ${what}, naming it, and writes nothing at all`, async () => {
      manifest = { files: paths.map((path) => file(path.replace("OUTSIDE", outside.slice(1)))) };
      const failure = await restore().then(
        () => "restored",
        (error: Error) => error.message,
      );
      expect(failure).toContain("checkpoint manifest refused");
      expect(failure).toContain(field);
      // The whole manifest is refused before a byte of it is written.
      expect(fetched).toBe(0);
      expect(readdirSync(dir)).toEqual([]);
      expectOutsideUntouched();
    });
  }
});

describe("the agent restores without following links left in the checkpoint folder", () => {
  it("a link to a folder outside, where the manifest has a folder", async () => {
    symlinkSync(outside, join(dir, "sub"));
    manifest = { files: [file("sub/pwned")] };
    await expect(restore()).rejects.toThrow(/sub\/pwned.*link/);
    expectOutsideUntouched();
  });

  it("a link to a file outside, where the manifest has a file", async () => {
    symlinkSync(join(outside, "victim"), join(dir, "state"));
    manifest = { files: [file("state")] };
    await expect(restore()).rejects.toThrow(/state.*link/);
    expectOutsideUntouched();
  });

  it("a link to nothing yet, where the manifest has a file", async () => {
    symlinkSync(join(outside, "created"), join(dir, "state"));
    manifest = { files: [file("state")] };
    await expect(restore()).rejects.toThrow(/state.*link/);
    expectOutsideUntouched();
  });

  it("a link deeper down, under a folder the restore makes", async () => {
    mkdirSync(join(dir, "a", "b"), { recursive: true });
    symlinkSync(outside, join(dir, "a", "b", "c"));
    manifest = { files: [file("a/b/c/d/pwned")] };
    await expect(restore()).rejects.toThrow(/a\/b\/c\/d\/pwned.*link/);
    expectOutsideUntouched();
  });

  it("restores plain files and folders (so the refusals above are about the paths and links)", async () => {
    manifest = { files: [file("state"), file("sub/dir/more")] };
    expect(await restore()).toBe(2);
    expect(readFileSync(join(dir, "state"), "utf8")).toBe(CONTENT);
    expect(readFileSync(join(dir, "sub", "dir", "more"), "utf8")).toBe(CONTENT);
    expect(lstatSync(join(dir, "sub")).isDirectory()).toBe(true);
    expectOutsideUntouched();
    expect(existsSync(join(dir, "..", "pwned"))).toBe(false);
  });
});

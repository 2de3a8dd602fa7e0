// Files a job wrote, as the agent reads them: regular files of the job's own only, links followed to
// such files alone, a fifo or a folder never waited on or read, and the file opened is the one read
// whatever is renamed meanwhile. Real files in a temporary folder.

import { execFileSync } from "node:child_process";
import {
  mkdirSync,
  openAsBlob,
  readFileSync,
  renameSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { openJobFile, readJobFile } from "../../../../src/agent/files/job-written-file.ts";
import { cleanup, tempDir } from "../../../helpers/steward.ts";

describe("job files", () => {
  const dir = tempDir("steward-job-file-");
  afterAll(() => cleanup(dir));
  const me = statSync(dir).uid;
  const someoneElse = me + 1;

  it("reads a regular file, whole or its start, when its owner is the job's", async () => {
    writeFileSync(join(dir, "progress"), "0.25\n");
    expect(await readJobFile(join(dir, "progress"), me, 64)).toBe("0.25\n");
    expect(await readJobFile(join(dir, "progress"), null, 64)).toBe("0.25\n");
    expect(await readJobFile(join(dir, "progress"), me, 3)).toBe("0.2");
  });

  it("takes nothing that is someone else's, also through a link", async () => {
    writeFileSync(join(dir, "secret"), "token");
    symlinkSync(join(dir, "secret"), join(dir, "link"));
    expect(await readJobFile(join(dir, "secret"), someoneElse, 64)).toBeNull();
    expect(await readJobFile(join(dir, "link"), someoneElse, 64)).toBeNull();
    expect(await openJobFile(join(dir, "link"), someoneElse)).toBeNull();
    // A link to the job's own file is followed.
    expect(await readJobFile(join(dir, "link"), me, 64)).toBe("token");
  });

  it("answers null at once for a fifo, a folder, a dangling link or nothing", async () => {
    execFileSync("mkfifo", [join(dir, "fifo")]);
    mkdirSync(join(dir, "folder"));
    symlinkSync(join(dir, "nowhere"), join(dir, "dangling"));
    for (const name of ["fifo", "folder", "dangling", "absent"])
      expect(await readJobFile(join(dir, name), null, 64)).toBeNull();
  });

  it("reads the file it opened, whatever takes its name afterwards", async () => {
    writeFileSync(join(dir, "out"), "first");
    const file = await openJobFile(join(dir, "out"), me);
    expect(file).not.toBeNull();
    renameSync(join(dir, "out"), join(dir, "out.old"));
    writeFileSync(join(dir, "out"), "second");
    try {
      expect(readFileSync(file!.path, "utf8")).toBe("first");
      expect(await (await openAsBlob(file!.path)).text()).toBe("first");
    } finally {
      await file!.close();
    }
  });
});

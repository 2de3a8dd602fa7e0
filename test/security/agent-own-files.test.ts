// Issue 22, item 8: the files an agent makes for itself in its work folder never follow a link
// found in their place (one planted while the folder was open to others, or by a job of the
// agent's own account in a kept folder): the kept files written in place (start.json, job.sh, pid,
// exit), the host credential's temporary file, and the files of a new attempt. And the work
// folder an agent is given no --work for is a private one of its account's, not one in /tmp.

import { execFileSync } from "node:child_process";
import {
  existsSync,
  linkSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { writeInPlace } from "../../src/agent/attempt/spare-folders.ts";
import { readHostCredential, writeHostCredential } from "../../src/agent/connection/host-credential.ts";
import { writeNewFile } from "../../src/agent/files/new-file.ts";
import { HOST_CREDENTIAL_FILE } from "../../src/common/protocol/messages.ts";
import { defaultWorkFolder } from "../../src/daemons/work-folder.ts";

let work: string;
let victim: string;
beforeEach(() => {
  work = mkdtempSync(join(tmpdir(), "steward-own-files-"));
  victim = join(work, "victim");
  writeFileSync(victim, "intact\n");
});
afterEach(() => rmSync(work, { recursive: true, force: true }));

describe("writeInPlace (kept files: start.json, job.sh, pid, exit)", () => {
  it("does not write through a link in the file's place: the link goes, a file of its own takes it", () => {
    const path = join(work, "job.sh");
    symlinkSync(victim, path);
    writeInPlace(path, "exec setsid true\n");
    expect(readFileSync(victim, "utf8")).toBe("intact\n");
    expect(lstatSync(path).isFile()).toBe(true);
    expect(readFileSync(path, "utf8")).toBe("exec setsid true\n");
  });

  it("does not write into a hard link of another file, nor open a fifo in its place", () => {
    const path = join(work, "start.json");
    linkSync(victim, path);
    writeInPlace(path, "{}");
    expect(readFileSync(victim, "utf8")).toBe("intact\n");
    expect(lstatSync(path).nlink).toBe(1);
    const fifo = join(work, "pid");
    execFileSync("mkfifo", [fifo]);
    writeInPlace(fifo, "\n");
    expect(lstatSync(fifo).isFile()).toBe(true);
  });
});

describe("writeNewFile (an attempt's new files, stop requests)", () => {
  it("replaces whatever is in its place, never following a link, mode 0600", () => {
    const path = join(work, "stdout");
    symlinkSync(victim, path);
    writeNewFile(path, "");
    expect(readFileSync(victim, "utf8")).toBe("intact\n");
    const info = lstatSync(path);
    expect([info.isFile(), (info.mode & 0o777).toString(8)]).toEqual([true, "600"]);
  });

  it("refuses a folder in its place", () => {
    mkdirSync(join(work, "nodes"));
    expect(() => writeNewFile(join(work, "nodes"), "x")).toThrow();
  });
});

describe("the host credential", () => {
  it("is written through a temporary file that never follows a link planted at its name", async () => {
    symlinkSync(victim, join(work, `${HOST_CREDENTIAL_FILE}.${process.pid}.tmp`));
    await writeHostCredential(work, "cred-1");
    expect(readFileSync(victim, "utf8")).toBe("intact\n");
    expect(await readHostCredential(work)).toBe("cred-1");
    expect((lstatSync(join(work, HOST_CREDENTIAL_FILE)).mode & 0o777).toString(8)).toBe("600");
    expect(existsSync(join(work, `${HOST_CREDENTIAL_FILE}.${process.pid}.tmp`))).toBe(false);
  });
});

describe("the agent's default work folder", () => {
  it("is /var/lib/steward/agent/NAME for root", () => {
    expect(defaultWorkFolder("node7", { uid: 0, env: { HOME: "/root" }, home: "/root" })).toBe(
      "/var/lib/steward/agent/node7",
    );
  });

  it("is $XDG_STATE_HOME/steward/agent/NAME, or ~/.local/state/steward/agent/NAME, for another account", () => {
    const home = "/home/alice";
    expect(defaultWorkFolder("n", { uid: 1000, env: { XDG_STATE_HOME: "/s" }, home })).toBe(
      "/s/steward/agent/n",
    );
    expect(defaultWorkFolder("n", { uid: 1000, env: {}, home })).toBe(
      "/home/alice/.local/state/steward/agent/n",
    );
    // The XDG specification: a relative path is invalid and is ignored.
    expect(defaultWorkFolder("n", { uid: 1000, env: { XDG_STATE_HOME: "rel" }, home })).toBe(
      "/home/alice/.local/state/steward/agent/n",
    );
  });

  it("is never under the shared temporary folder", () => {
    const path = defaultWorkFolder("n", { uid: 1000, env: {}, home: "/home/alice" });
    expect(path.startsWith(tmpdir())).toBe(false);
  });
});

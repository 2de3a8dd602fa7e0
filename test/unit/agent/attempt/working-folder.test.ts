// The check of a job's working folder before it runs in place: the system's answer to the job's
// account. For the agent's own account, its own access(2); for another account, a shell dropped to
// it through setpriv (as root, with setpriv and the account `nobody`: skipped saying why elsewhere).
// The agent never makes the folder nor changes it.

import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { type Account, findExecutable } from "../../../../src/agent/accounts/run-as.ts";
import { workingFolderRefusal } from "../../../../src/agent/attempt/working-folder.ts";
import { cleanup, tempDir } from "../../../helpers/steward.ts";

const dir = tempDir("steward-working-folder-");
afterAll(() => cleanup(dir));
const own = `uid ${process.geteuid?.() ?? 0} (the agent's account)`;

describe("a job of the agent's own account", () => {
  const folder = join(dir, "own");
  mkdirSync(folder);
  writeFileSync(join(dir, "a-file"), "");

  it.each<[string, string, string | null]>([
    ["a folder it may enter", folder, null],
    [
      "no such folder",
      join(dir, "missing"),
      `working folder ${join(dir, "missing")}: no such folder for ${own} (or a folder above it ${own} may not pass)`,
    ],
    ["a file", join(dir, "a-file"), `working folder ${join(dir, "a-file")}: not a folder`],
    [
      "below a file",
      join(dir, "a-file", "x"),
      `working folder ${join(dir, "a-file", "x")}: no such folder for ${own} (or a folder above it ${own} may not pass)`,
    ],
  ])("%s", async (_, path, refusal) => {
    expect(await workingFolderRefusal(path, null)).toBe(refusal);
  });

  it("is not made when missing", async () => {
    await workingFolderRefusal(join(dir, "never-made"), null);
    expect(statSync(join(dir, "never-made"), { throwIfNoEntry: false })).toBeUndefined();
  });
});

/** Why this machine cannot run a shell as `nobody` through setpriv, or null. */
function asNobodyUnavailable(): string | null {
  if (process.getuid?.() !== 0) return "not root";
  if (!findExecutable("setpriv", process.env.PATH ?? "/usr/bin:/bin")) return "no setpriv";
  try {
    execFileSync("id", ["-u", "nobody"], { stdio: "ignore" });
  } catch {
    return "no account nobody";
  }
  return null;
}

const unavailable = asNobodyUnavailable();
describe.skipIf(unavailable !== null)(
  `a job of another account (nobody)${unavailable ? `: skipped, ${unavailable}` : ""}`,
  () => {
    const uid = unavailable
      ? 65534
      : Number(execFileSync("id", ["-u", "nobody"], { encoding: "utf8" }).trim());
    const gid = unavailable
      ? 65534
      : Number(execFileSync("id", ["-g", "nobody"], { encoding: "utf8" }).trim());
    const nobody: Account = { name: "nobody", uid, gid, groups: [gid], home: "/nonexistent" };
    const user = {
      account: nobody,
      setpriv: findExecutable("setpriv", process.env.PATH ?? "/usr/bin:/bin") ?? "",
    };
    const who = `nobody (uid ${uid})`;
    // Passable by all, so that what keeps the account out is each folder's own mode.
    const base = join(dir, "others");
    mkdirSync(base);
    chmodSync(dir, 0o755);
    chmodSync(base, 0o755);
    const open = join(base, "open");
    const closed = join(base, "closed");
    const behind = join(base, "behind");
    for (const folder of [open, closed, behind]) mkdirSync(folder);
    chmodSync(closed, 0o700);
    mkdirSync(join(behind, "inner"));
    chmodSync(behind, 0o700);
    writeFileSync(join(base, "a-file"), "");

    it.each<[string, string, string | null]>([
      ["a folder the account may enter", open, null],
      [
        "root's folder of mode 0700: the system refuses the account",
        closed,
        `working folder ${closed}: permission denied to ${who} (it may not enter the folder)`,
      ],
      [
        "a folder behind one it may not pass",
        join(behind, "inner"),
        `working folder ${join(behind, "inner")}: no such folder for ${who} (or a folder above it ${who} may not pass)`,
      ],
      [
        "no such folder",
        join(base, "missing"),
        `working folder ${join(base, "missing")}: no such folder for ${who} (or a folder above it ${who} may not pass)`,
      ],
      ["a file", join(base, "a-file"), `working folder ${join(base, "a-file")}: not a folder`],
    ])("%s", async (_, path, refusal) => {
      expect(await workingFolderRefusal(path, user)).toBe(refusal);
      // Root changed nothing of it.
      if (path === closed) expect(statSync(closed).mode & 0o777).toBe(0o700);
    });
  },
);

describe("a check that gets no answer", () => {
  it("fails the attempt once its time is up", async () => {
    const slow = join(dir, "slow-setpriv");
    writeFileSync(slow, "#!/bin/sh\nexec sleep 5\n", { mode: 0o755 });
    const user = { account: { name: "x", uid: 1, gid: 1, groups: [], home: "/" }, setpriv: slow };
    const started = Date.now();
    expect(await workingFolderRefusal("/data/run1", user, 100)).toBe(
      "working folder /data/run1: no answer within 0.1 s (a filesystem not answering?)",
    );
    expect(Date.now() - started).toBeLessThan(3000);
  });

  it("says so when the check itself fails", async () => {
    const broken = join(dir, "broken-setpriv");
    writeFileSync(broken, "#!/bin/sh\nexit 1\n", { mode: 0o755 });
    const user = { account: { name: "x", uid: 1, gid: 1, groups: [], home: "/" }, setpriv: broken };
    expect(await workingFolderRefusal("/data/run1", user)).toBe(
      "working folder /data/run1: could not be checked as x (uid 1) (exit code 1)",
    );
  });
});

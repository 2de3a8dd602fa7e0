// Whom an agent runs jobs as: the passwd line read with `getent passwd NAME`, the flags' checks at
// start, the start log line, the account of one attempt, and the job.sh that drops to it.

import { execFileSync } from "node:child_process";
import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import {
  type Account,
  accountFor,
  chooseRunAs,
  findExecutable,
  parsePasswdLine,
  rootReason,
  runAsNotice,
  unfitReason,
} from "../../../../src/agent/accounts/run-as.ts";
import { jobEnvironmentFile, jobScript } from "../../../../src/agent/attempt/job-script.ts";
import type { StartMessage } from "../../../../src/common/protocol/messages.ts";
import { cleanup, tempDir } from "../../../helpers/steward.ts";

const binUid = Number(execFileSync("id", ["-u", "bin"], { encoding: "utf8" }).trim());

const alice: Account = { name: "alice", uid: 1001, gid: 1002, groups: [1002, 27], home: "/home/alice" };

describe("parsePasswdLine", () => {
  it.each([
    [
      "alice:x:1001:1002:Alice:/home/alice:/bin/bash",
      { name: "alice", uid: 1001, gid: 1002, home: "/home/alice" },
    ],
    [
      "svc:x:999:999::/nonexistent:/usr/sbin/nologin\n",
      { name: "svc", uid: 999, gid: 999, home: "/nonexistent" },
    ],
    ["broken:x:abc:1::/:/bin/sh", null],
    ["empty:x::1::/:/bin/sh", null],
    ["short:x:1", null],
    ["", null],
  ])("%j", (line, account) => expect(parsePasswdLine(line)).toEqual(account));
});

describe("rootReason", () => {
  it("refuses root and root's group, takes anyone else", () => {
    expect(rootReason({ ...alice, uid: 0 })).toBe("that account is root");
    expect(rootReason({ ...alice, gid: 0 })).toBe("that account's group is root's");
    expect(rootReason(alice)).toBeNull();
  });

  it("refuses an account with root's group among its supplementary groups", () => {
    expect(rootReason({ ...alice, groups: [1002, 0, 27] })).toBe(
      "alice (uid 1001) has root's group (gid 0) among its groups",
    );
  });
});

describe("unfitReason", () => {
  const system = { min: 1000, source: "login.defs" } as const;
  it.each([
    ["root", { ...alice, uid: 0, gid: 0, groups: [0] }, system, "that account is root"],
    [
      "in root's group",
      { ...alice, groups: [1002, 0] },
      system,
      "alice (uid 1001) has root's group (gid 0) among its groups",
    ],
    [
      "a system account",
      { ...alice, uid: 1, gid: 1, groups: [1] },
      system,
      "alice (uid 1) is a system account, below uid 1000 (UID_MIN in /etc/login.defs; --run-as-min-uid N to change)",
    ],
    [
      "just below",
      { ...alice, uid: 999 },
      { min: 1000, source: "flag" } as const,
      "alice (uid 999) is a system account, below uid 1000 (--run-as-min-uid)",
    ],
    ["at the limit", { ...alice, uid: 1000 }, system, null],
    ["above it", alice, system, null],
    ["a lowered limit", { ...alice, uid: 1 }, { min: 1, source: "flag" } as const, null],
    [
      "root, whatever the limit",
      { ...alice, uid: 0 },
      { min: 0, source: "flag" } as const,
      "that account is root",
    ],
  ])("%s", (_what, account, limit, reason) => expect(unfitReason(account, limit)).toBe(reason));
});

describe("findExecutable", () => {
  const dir = tempDir("steward-find-");
  afterAll(() => cleanup(dir));

  it("finds an executable by its full path, skipping files that are not and relative folders", () => {
    const first = join(dir, "a");
    const second = join(dir, "b");
    mkdirSync(first);
    mkdirSync(second);
    writeFileSync(join(first, "tool"), "#!/bin/sh\n");
    chmodSync(join(first, "tool"), 0o644);
    writeFileSync(join(second, "tool"), "#!/bin/sh\n");
    chmodSync(join(second, "tool"), 0o755);
    expect(findExecutable("tool", ["relative", first, second].join(":"))).toBe(join(second, "tool"));
    expect(findExecutable("none", [first, second].join(":"))).toBeNull();
    expect(findExecutable("tool", "")).toBeNull();
  });
});

describe("chooseRunAs", () => {
  it("refuses the flags without root, together, or naming no account or root", async () => {
    await expect(chooseRunAs({ runAsOwner: true }, 1000)).rejects.toThrow(
      "--run-as-owner needs the agent to run as root",
    );
    await expect(chooseRunAs({ runAs: "alice" }, 1000)).rejects.toThrow(
      "--run-as needs the agent to run as root",
    );
    await expect(chooseRunAs({ runAs: "x", runAsOwner: true }, 0)).rejects.toThrow("do not go together");
    await expect(chooseRunAs({ runAs: "no-such-account-here" }, 0)).rejects.toThrow(
      "--run-as no-such-account-here: no such local account",
    );
    await expect(chooseRunAs({ runAs: "bad name;" }, 0)).rejects.toThrow("no such local account");
    await expect(chooseRunAs({ runAs: "root" }, 0)).rejects.toThrow("--run-as root: that account is root");
  });

  it("refuses --run-as-min-uid alone, and a system account for --run-as unless the limit allows it", async () => {
    await expect(chooseRunAs({ runAsMinUid: 100 }, 0)).rejects.toThrow(
      "--run-as-min-uid goes with --run-as USER or --run-as-owner",
    );
    // bin is there on every Linux system, with a uid below 100 (2 on Debian, 1 on Red Hat).
    await expect(chooseRunAs({ runAs: "bin" }, 0)).rejects.toThrow(
      new RegExp(`^--run-as bin: bin \\(uid ${binUid}\\) is a system account, below uid \\d+ \\(`),
    );
    await expect(chooseRunAs({ runAs: "bin", runAsMinUid: binUid + 1 }, 0)).rejects.toThrow(
      `--run-as bin: bin (uid ${binUid}) is a system account, below uid ${binUid + 1} (--run-as-min-uid)`,
    );
  });

  it("runs jobs as the agent's own account with neither flag, as root or not", async () => {
    expect(await chooseRunAs({}, 1000)).toEqual({ kind: "self" });
    expect(await chooseRunAs({}, 0)).toEqual({ kind: "self" });
  });
});

describe("runAsNotice", () => {
  it("says whom jobs run as, and warns when that is root", () => {
    expect(runAsNotice({ kind: "self" }, 1000)).toEqual({
      warn: false,
      message: `jobs run as ${os.userInfo().username} (the agent's own account)`,
    });
    const root = runAsNotice({ kind: "self" }, 0);
    expect(root.warn).toBe(true);
    expect(root.message).toMatch(/^jobs run as root: .*neither --run-as USER nor --run-as-owner/);
    expect(runAsNotice({ kind: "user", account: alice, setpriv: "/usr/bin/setpriv" }, 0)).toEqual({
      warn: false,
      message: "jobs run as alice (uid 1001): --run-as",
    });
    expect(runAsNotice({ kind: "owner", setpriv: "/usr/bin/setpriv" }, 0).message).toBe(
      "jobs run as the local account named like their owner: --run-as-owner",
    );
    expect(
      runAsNotice({ kind: "owner", setpriv: "/usr/bin/setpriv", limit: { min: 500, source: "flag" } }, 0)
        .message,
    ).toBe(
      "jobs run as the local account named like their owner: --run-as-owner; none below uid 500 (--run-as-min-uid)",
    );
  });
});

describe("accountFor", () => {
  it("is the agent's own, the one account, or the owner's, which must exist and not be root", async () => {
    expect(await accountFor({ kind: "self" }, "bob")).toBeNull();
    expect(await accountFor({ kind: "user", account: alice, setpriv: "/s" }, "bob")).toEqual({
      account: alice,
      setpriv: "/s",
    });
    const owner = { kind: "owner", setpriv: "/s" } as const;
    await expect(accountFor(owner, "nosuchstwuser")).rejects.toThrow(
      'no local account "nosuchstwuser" for the job\'s owner (this agent runs jobs as their owners: --run-as-owner)',
    );
    await expect(accountFor(owner, undefined)).rejects.toThrow('no local account ""');
    await expect(accountFor(owner, "root")).rejects.toThrow(
      'the job\'s owner "root" maps to a local account this agent never runs jobs as: that account is root',
    );
    await expect(accountFor({ ...owner, limit: { min: binUid + 1, source: "flag" } }, "bin")).rejects.toThrow(
      `the job's owner "bin" maps to a local account this agent never runs jobs as: bin (uid ${binUid}) is a system account, below uid ${binUid + 1} (--run-as-min-uid)`,
    );
  });
});

describe("jobScript", () => {
  const spec: StartMessage = {
    type: "start",
    jobId: "j1",
    taskIndex: 0,
    attempt: 1,
    owner: "alice",
    restarted: false,
    command: "echo 'hi'",
    env: { PATH: "/home/alice/bin", LD_PRELOAD: "/home/alice/evil.so" },
    inputs: [],
    outputs: [],
    cpus: 1,
    timeLimitSeconds: null,
    graceSeconds: 30,
    checkpointIntervalSeconds: 60,
  };
  const paths = {
    runDir: "/w/attempts/j1.0.1/run",
    checkpointDir: "/w/attempts/j1.0.1/checkpoint",
    progressFile: "/w/attempts/j1.0.1/notes/progress",
    requirementsFile: "/w/attempts/j1.0.1/notes/requirements",
    hostName: "h1",
  };

  it("exports the job's environment and execs it in a session of its own, as the agent's account", () => {
    const lines = jobScript(spec, paths).trimEnd().split("\n");
    expect(lines[0]).toBe("cd '/w/attempts/j1.0.1/run' || exit 126");
    expect(lines).toContain("export PATH='/home/alice/bin'");
    expect(lines.at(-1)).toBe(`exec setsid '/bin/sh' '-c' 'echo '\\''hi'\\'''`);
  });

  it("execs a command of plain words without a shell (simple-command.ts)", () => {
    const lines = jobScript({ ...spec, command: "sleep 30" }, paths)
      .trimEnd()
      .split("\n");
    expect(lines.at(-1)).toBe("exec setsid 'sleep' '30'");
  });

  it("drops to the account with setpriv by its full path before any of the job's environment takes effect", () => {
    const user = { account: alice, setpriv: "/usr/bin/setpriv" };
    const environmentFile = "/w/attempts/j1.0.1/environment";
    const lines = jobScript(spec, { ...paths, user, environmentFile })
      .trimEnd()
      .split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toBe("cd '/w/attempts/j1.0.1/run' || exit 126");
    const drop =
      "exec '/usr/bin/setpriv' --reuid=1001 --regid=1002 --groups=1002,27 --reset-env -- '/bin/sh' '-c' ";
    expect(lines[1].startsWith(drop)).toBe(true);
    // The environment is on no command line: the account's shell reads it on descriptor 3.
    expect(lines[1]).not.toContain("PATH");
    expect(lines[1]).not.toContain("evil.so");
    expect(lines[1]).not.toContain("STEWARD_");
    expect(lines[1].endsWith(`'steward-job' '/bin/sh' '-c' 'echo '\\''hi'\\''' 3<'${environmentFile}'`)).toBe(
      true,
    );
    const noGroups = jobScript(spec, {
      ...paths,
      user: { account: { ...alice, groups: [] }, setpriv: "/usr/bin/setpriv" },
      environmentFile,
    });
    expect(noGroups).toContain("--regid=1002 --clear-groups --reset-env");
    expect(() => jobScript(spec, { ...paths, user })).toThrow("needs its environment file");
  });

  it("the environment file holds the job's env, the STEWARD_* variables and the account's names, last", () => {
    const lines = jobEnvironmentFile(spec, { ...paths, user: { account: alice, setpriv: "/s" } })
      .trimEnd()
      .split("\n");
    expect(lines.slice(0, 2)).toEqual([
      "export PATH='/home/alice/bin'",
      "export LD_PRELOAD='/home/alice/evil.so'",
    ]);
    expect(lines).toContain("export STEWARD_PROGRESS_FILE='/w/attempts/j1.0.1/notes/progress'");
    expect(lines.slice(-3)).toEqual([
      "export HOME='/home/alice'",
      "export USER='alice'",
      "export LOGNAME='alice'",
    ]);
  });

  describe("the account's shell takes the environment from descriptor 3, whatever the values hold", () => {
    const dir = tempDir("steward-job-env-");
    afterAll(() => cleanup(dir));

    it("quotes, newlines, dollars and backquotes come through as they were; nothing else is run", () => {
      const env = {
        QUOTED: `it's "here"`,
        LINES: "one\ntwo\n\nexport INJECTED=1\n",
        DOLLAR: "$HOME `id` $(id) \\ ;|&",
        EMPTY: "",
      };
      const environmentFile = join(dir, "environment");
      const user = { account: alice, setpriv: "/s" };
      writeFileSync(environmentFile, jobEnvironmentFile({ ...spec, env }, { ...paths, user }), {
        mode: 0o600,
      });
      const show = [
        `for n in QUOTED LINES DOLLAR EMPTY INJECTED; do printf '%s=[%s]\\n' $n "$(printenv $n)"; done`,
        // The descriptor is closed before the command runs.
        "[ -e /proc/self/fd/3 ] && echo fd3-open || echo fd3-closed",
      ].join("; ");
      const script = jobScript(
        { ...spec, env, command: ["/bin/sh", "-c", show] },
        { ...paths, runDir: dir, user, environmentFile },
      );
      // What follows setpriv's `--`, run as this account: the part that takes the environment.
      const take = script.slice(script.indexOf(" -- ") + 4);
      const output = execFileSync("/bin/sh", ["-c", `cd ${dir} && exec ${take}`], { encoding: "utf8" });
      expect(output).toBe(
        [
          `QUOTED=[${env.QUOTED}]`,
          // $(...) drops the last newlines.
          "LINES=[one\ntwo\n\nexport INJECTED=1]",
          `DOLLAR=[${env.DOLLAR}]`,
          "EMPTY=[]",
          "INJECTED=[]",
          "fd3-closed",
          "",
        ].join("\n"),
      );
    });
  });
});

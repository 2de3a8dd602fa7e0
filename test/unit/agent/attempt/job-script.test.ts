// job.sh and launcher.pl's start of a job run in place (its `workdir`): a job of the agent's own
// account starts in the folder; a job of another account starts in its attempt's run/, root's shell
// going no further, and only its own shell, dropped to the account, enters the folder; one that
// cannot enter it runs nothing.

import { execFileSync, spawnSync } from "node:child_process";
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import type { Account } from "../../../../src/agent/accounts/run-as.ts";
import { type JobPaths, jobExec, jobScript } from "../../../../src/agent/attempt/job-script.ts";
import type { StartMessage } from "../../../../src/common/protocol/messages.ts";
import { cleanup, tempDir } from "../../../helpers/steward.ts";

const alice: Account = { name: "alice", uid: 1001, gid: 1002, groups: [1002], home: "/home/alice" };

const spec: StartMessage = {
  type: "start",
  jobId: "j1",
  taskIndex: 0,
  attempt: 1,
  owner: "alice",
  restarted: false,
  command: "./cfd input",
  env: {},
  inputs: [],
  outputs: [],
  cpus: 1,
  timeLimitSeconds: null,
  workdir: "/data/cfd/run 12",
  graceSeconds: 30,
  checkpointIntervalSeconds: 60,
};

const paths: JobPaths = {
  runDir: "/w/attempts/j1.0.1/run",
  workdir: "/data/cfd/run 12",
  checkpointDir: "/w/attempts/j1.0.1/checkpoint",
  progressFile: "/w/attempts/j1.0.1/progress",
  requirementsFile: "/w/attempts/j1.0.1/requirements",
  hostName: "h1",
};

describe("a job run in place", () => {
  it("of the agent's own account starts in its workdir", () => {
    const lines = jobScript(spec, paths).trimEnd().split("\n");
    expect(lines[0]).toBe("cd '/data/cfd/run 12' || exit 126");
    expect(lines.join("\n")).not.toContain("/w/attempts/j1.0.1/run'");
  });

  it("of the agent's own account, through launcher.pl, has its workdir as its cwd", () => {
    expect(jobExec(spec, paths, []).cwd).toBe("/data/cfd/run 12");
    const { workdir: _, ...inRunDir } = paths;
    expect(jobExec(spec, inRunDir, []).cwd).toBe("/w/attempts/j1.0.1/run");
  });

  it("of another account: root's shell stays in run/, the account's own shell enters the workdir", () => {
    const user = { account: alice, setpriv: "/usr/bin/setpriv" };
    const environmentFile = "/w/attempts/j1.0.1/environment";
    const lines = jobScript(spec, { ...paths, user, environmentFile })
      .trimEnd()
      .split("\n");
    expect(lines).toHaveLength(2);
    expect(lines[0]).toBe("cd '/w/attempts/j1.0.1/run' || exit 126");
    const drop = "exec '/usr/bin/setpriv' --reuid=1001 --regid=1002 --groups=1002 --reset-env -- ";
    expect(lines[1].startsWith(drop)).toBe(true);
    // Nothing before the drop names the folder: root never enters it.
    expect(lines[1].indexOf("/data/cfd/run 12")).toBeGreaterThan(drop.length);
    expect(lines[1]).toMatch(
      /^exec '\/usr\/bin\/setpriv' .* -- '\/bin\/sh' '-c' 'cd -- "\$1" \|\| exit 126; shift; /,
    );
    expect(lines[1].endsWith(`'steward-job' '/data/cfd/run 12' './cfd' 'input' 3<'${environmentFile}'`)).toBe(
      true,
    );
  });

  it("of another account without a workdir is as before: no folder to enter", () => {
    const { workdir: _, ...inRunDir } = paths;
    const user = { account: alice, setpriv: "/usr/bin/setpriv" };
    const script = jobScript(spec, { ...inRunDir, user, environmentFile: "/w/environment" });
    expect(script).not.toContain('cd -- "$1"');
    expect(script).toContain("'steward-job' './cfd' 'input' 3<'/w/environment'");
  });

  describe("the account's shell, run here", () => {
    const dir = tempDir("steward-job-workdir-");
    const workdir = join(dir, "in place");
    mkdirSync(workdir);
    const environmentFile = join(dir, "environment");
    execFileSync("sh", ["-c", `: > '${environmentFile}'`]);
    afterAll(() => cleanup(dir));

    /** What follows setpriv's `--` (the part run as the account), run as this process. */
    function runAsAccountPart(folder: string): { status: number | null; stdout: string; stderr: string } {
      const user = { account: alice, setpriv: "/s" };
      const script = jobScript(
        { ...spec, command: ["/bin/sh", "-c", 'echo "$PWD"; pwd -P'], workdir: folder },
        { ...paths, runDir: dir, workdir: folder, user, environmentFile },
      );
      const part = script.slice(script.indexOf(" -- ") + 4);
      const result = spawnSync("/bin/sh", ["-c", `cd '${dir}' && exec ${part}`], { encoding: "utf8" });
      return { status: result.status, stdout: result.stdout, stderr: result.stderr };
    }

    it("runs the command in the workdir, $PWD naming it", () => {
      const { status, stdout } = runAsAccountPart(workdir);
      expect(status).toBe(0);
      expect(stdout).toBe(`${workdir}\n${workdir}\n`);
    });

    it("runs nothing when it cannot enter the workdir (exit 126)", () => {
      const { status, stdout, stderr } = runAsAccountPart(join(dir, "missing"));
      expect(status).toBe(126);
      expect(stdout).toBe("");
      expect(stderr).toContain("missing");
    });
  });
});

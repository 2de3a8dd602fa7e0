// A job finds the Python SDK with no install: the agent puts Steward's python/ folder first on the
// job's PYTHONPATH (and names it in STEWARD_PYTHONPATH), keeping the PYTHONPATH the job would have.

import { existsSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import {
  jobEnvironment,
  jobEnvironmentFile,
  jobScript,
  PYTHON_SDK_PATH,
} from "../../src/agent/attempt/job-script.ts";
import type { StartMessage } from "../../src/common/protocol/messages.ts";
import { ROOT } from "../helpers/steward.ts";

const spec: StartMessage = {
  type: "start",
  jobId: "j1",
  taskIndex: 0,
  attempt: 1,
  owner: "alice",
  restarted: false,
  command: ["python3", "main.py"],
  env: {},
  inputs: [],
  outputs: [],
  cpus: 1,
  timeLimitSeconds: null,
  graceSeconds: 30,
  checkpointIntervalSeconds: 60,
};
const paths = {
  runDir: "/w/a/run",
  checkpointDir: "/w/a/checkpoint",
  progressFile: "/w/a/progress",
  requirementsFile: "/w/a/requirements",
  hostName: "h1",
};

describe("the Python SDK on a job's PYTHONPATH", () => {
  it("is the repository's python/ folder, holding the steward package", () => {
    expect(PYTHON_SDK_PATH).toBe(join(ROOT, "python"));
    expect(existsSync(join(PYTHON_SDK_PATH, "steward", "__init__.py"))).toBe(true);
  });

  it("comes first, before the job file's PYTHONPATH or else the inherited one", () => {
    expect(jobEnvironment(spec, paths)).toMatchObject({
      PYTHONPATH: PYTHON_SDK_PATH,
      STEWARD_PYTHONPATH: PYTHON_SDK_PATH,
    });
    expect(jobEnvironment(spec, paths, { PYTHONPATH: "/agent/lib" }).PYTHONPATH).toBe(
      `${PYTHON_SDK_PATH}:/agent/lib`,
    );
    const own = { ...spec, env: { PYTHONPATH: "/home/alice/lib" } };
    expect(jobEnvironment(own, paths, { PYTHONPATH: "/agent/lib" }).PYTHONPATH).toBe(
      `${PYTHON_SDK_PATH}:/home/alice/lib`,
    );
  });

  it("reaches a job run as another account, whose environment starts afresh", () => {
    const account = { name: "alice", uid: 1001, gid: 1002, groups: [], home: "/home/alice" };
    // Its environment goes in the environment file job.sh hands it, not on a command line.
    const runAs = {
      ...paths,
      user: { account, setpriv: "/usr/bin/setpriv" },
      environmentFile: "/w/a/environment",
    };
    expect(jobScript(spec, runAs)).not.toContain("PYTHONPATH");
    expect(jobEnvironmentFile(spec, runAs)).toContain(`export PYTHONPATH='${PYTHON_SDK_PATH}'\n`);
  });
});

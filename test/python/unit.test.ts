// The Python SDK's own unit tests (test/python/unit, python3 -m unittest): the job SDK's file
// protocol, and the client's redirect rule, errors, multipart bodies, event stream, paging and
// requests naming many jobs; telling workflow files, acct's since, JobFailed and WorkflowFailed,
// handles, waiting and closing streams; steward.futures' payload and runner, job file, event
// watcher, and executor over a fake client.

import { join } from "node:path";
import { expect, it } from "vitest";
import { ROOT } from "../helpers/steward.ts";
import { describePython, runPython } from "./python.ts";

describePython("the Python SDK's unit tests", () => {
  it("pass", async () => {
    const run = await runPython(["-m", "unittest", "discover", "-s", join(ROOT, "test/python/unit")]);
    expect(run.stderr).toMatch(/\nOK\n?$/);
    expect(run.code, run.stderr).toBe(0);
  }, 60_000);
});

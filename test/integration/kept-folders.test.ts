// Kept attempt folders with real processes: the next attempt on the host runs in the folder the
// last one left, and a process the last job left behind (its own session, beyond the group kill at
// the job's end), still holding the job's stdout and working folder, reaches none of the new job's
// parts: its writes go nowhere the new job, its log or its checkpoint see.

import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  api,
  cleanup,
  cli,
  type StewardProcess,
  startUp,
  tempDir,
  waitForJobEnd,
} from "../helpers/steward.ts";

let steward: StewardProcess;
let shared: string;

beforeAll(async () => {
  steward = await startUp({ agents: 1, slots: 1 });
  shared = tempDir("steward-kept-");
});

afterAll(async () => {
  await steward?.stop();
  cleanup(steward?.data, shared);
});

async function logOf(id: string): Promise<string> {
  return (await cli(steward, ["logs", id])).stdout;
}

describe("kept attempt folders", () => {
  it("give the next attempt new parts: a process the last job left behind reaches none of them", async () => {
    const spare = join(steward.data, "agents", "local-1", "spare");
    // Job A leaves a process in a session of its own, which waits for job B to run, then writes to
    // its stdout, its working folder and its checkpoint folder, and notes whether each took.
    const leftBehind = [
      `while [ ! -e ${shared}/b-started ]; do sleep 0.05; done`,
      "echo leaked",
      `echo leaked > leaked.txt 2>/dev/null && echo run-wrote >> ${shared}/where || echo run-refused >> ${shared}/where`,
      `echo leaked > "$STEWARD_CHECKPOINT_DIR/leaked" 2>/dev/null && echo checkpoint-wrote >> ${shared}/where || echo checkpoint-refused >> ${shared}/where`,
      `touch ${shared}/leaked-done`,
    ].join("; ");
    const a = await api(steward, "POST", "/api/v1/jobs", {
      command: `setsid sh -c '${leftBehind}' & echo first`,
    });
    expect((await waitForJobEnd(steward, a.id)).state).toBe("succeeded");
    expect(readdirSync(spare)).toHaveLength(1);
    const b = await api(steward, "POST", "/api/v1/jobs", {
      command: [
        `touch ${shared}/b-started`,
        `while [ ! -e ${shared}/leaked-done ]; do sleep 0.05; done`,
        "ls -A",
        'ls -A "$STEWARD_CHECKPOINT_DIR"',
        "echo second",
      ].join("; "),
    });
    expect((await waitForJobEnd(steward, b.id)).state).toBe("succeeded");
    expect(readFileSync(join(shared, "where"), "utf8")).toBe("run-refused\ncheckpoint-refused\n");
    expect(await logOf(b.id)).toBe("second\n");
    expect(await logOf(a.id)).toBe("first\n");
    // B ran in the folder A left (one kept folder, not two), and went back there after.
    expect(readdirSync(spare)).toHaveLength(1);
    expect(existsSync(join(shared, "leaked-done"))).toBe(true);
  });
});

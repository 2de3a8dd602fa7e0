// Kept attempt folders with real processes: the next attempt on the host runs in the folder the
// last one left, and a process the last job left behind (its own session, beyond the group kill at
// the job's end), still holding the job's stdout and working folder, reaches none of the new job's
// parts: its writes go nowhere the new job, its log or its checkpoint see. The agent enforces no
// limits here (--no-enforce), as on a host without cgroups: with them, that process would not
// outlive its attempt at all (enforcement.test.ts).

import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { enforcementUnavailable, skipUnlessEnforced } from "../helpers/agent-cgroups.ts";
import {
  api,
  cleanup,
  cli,
  type StewardProcess,
  startUp,
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

let steward: StewardProcess;
let shared: string;

beforeAll(async () => {
  steward = await startUp({ agents: 1, slots: 1, args: ["--no-enforce"] });
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
    // Each wait gives up after 20 s, so that a failure shows as one rather than as a hang.
    const waitFile = (name: string) =>
      `i=0; while [ ! -e ${shared}/${name} ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done`;
    const leftBehind = [
      `touch ${shared}/escaped`,
      waitFile("b-started"),
      "echo leaked",
      `echo leaked > leaked.txt 2>/dev/null && echo run-wrote >> ${shared}/where || echo run-refused >> ${shared}/where`,
      `echo leaked > "$STEWARD_CHECKPOINT_DIR/leaked" 2>/dev/null && echo checkpoint-wrote >> ${shared}/where || echo checkpoint-refused >> ${shared}/where`,
      `touch ${shared}/leaked-done`,
    ].join("; ");
    const a = await api(steward, "POST", "/api/v1/jobs", {
      // A ends only once that process has a session of its own: the group kill at A's end misses it.
      command: `setsid sh -c '${leftBehind}' & ${waitFile("escaped")}; echo first`,
    });
    expect((await waitForJobEnd(steward, a.id)).state).toBe("succeeded");
    // The agent keeps the folder once the server has the end.
    await waitFor("A's folder kept", () => readdirSync(spare).length === 1);
    const b = await api(steward, "POST", "/api/v1/jobs", {
      command: [
        `touch ${shared}/b-started`,
        waitFile("leaked-done"),
        "ls -A",
        'ls -A "$STEWARD_CHECKPOINT_DIR"',
        // B runs in the folder A left: none is kept meanwhile.
        `echo kept: $(ls -A ${spare} | wc -l)`,
        "echo second",
      ].join("; "),
    });
    expect((await waitForJobEnd(steward, b.id)).state).toBe("succeeded");
    expect(readFileSync(join(shared, "where"), "utf8")).toBe("run-refused\ncheckpoint-refused\n");
    expect(await logOf(b.id)).toBe("kept: 0\nsecond\n");
    expect(await logOf(a.id)).toBe("first\n");
    await waitFor("B's folder kept", () => readdirSync(spare).length === 1);
    expect(existsSync(join(shared, "leaked-done"))).toBe(true);
  });
});

describe("kept attempt folders on an enforcing agent", () => {
  const unavailable = enforcementUnavailable();
  let enforcing: StewardProcess | null = null;

  afterAll(async () => {
    await enforcing?.stop();
    if (enforcing) cleanup(enforcing.data);
  });

  it("keep the empty working folder of a job whose cgroup was emptied, and never a folder the job left something in", async (context) => {
    skipUnlessEnforced(context, unavailable);
    enforcing = await startUp({ agents: 1, slots: 1 });
    const server = enforcing;
    // Each job prints its working folder's inode; the third leaves a file there and a process
    // in a session of its own, which the end of its cgroup kills.
    const runInode = async (command: string) => {
      const { id } = await api(server, "POST", "/api/v1/jobs", { command: `stat -c %i .; ${command}` });
      expect((await waitForJobEnd(server, id)).state).toBe("succeeded");
      const spare = join(server.data, "agents", "local-1", "spare");
      await waitFor("the folder kept", () => readdirSync(spare).length === 1);
      return (await cli(server, ["logs", id])).stdout.trim();
    };
    const first = await runInode("true");
    expect(await runInode("true")).toBe(first);
    expect(await runInode("echo left > left.txt; setsid sleep 300 </dev/null >/dev/null 2>&1 &")).toBe(first);
    // The next job's working folder is a new, empty one: nothing of the third job's is in it.
    expect((await runInode("ls -A")).split("\n")).toHaveLength(1);
  });
});

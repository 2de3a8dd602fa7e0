// A job run in place (its workdir, in a folder the host shares) on a --run-as-owner host enters its
// folder as the job's account, never as root: in a folder of its account's it runs there and what
// it writes is that account's; a folder root alone may enter (mode 0700), one behind a folder the
// account may not pass, and one that is not there each fail the attempt with the system's refusal
// naming the folder, and root neither makes the folder nor changes its owner or mode. Needs root,
// useradd and setpriv (as test/integration/run-as.test.ts): without them the file fails under CI
// and skips elsewhere.

import { chmodSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeRunAs, makeAccount, removeAccount, submitAs } from "../helpers/local-accounts.ts";
import {
  type AgentProcess,
  cleanup,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

// An account of this file's own: the run-as tests of other files make and remove theirs.
const OWNER = "stwworkdir1";

describeRunAs(
  "the run-as workdir tests",
  "a --run-as-owner host enters a job's workdir as the job's account",
  () => {
    let server: StewardProcess & { joinToken: string };
    let agent: AgentProcess;
    let uid: number;
    // The shared folder: passable by all, so that what keeps the account out is each folder's own mode.
    const shared = tempDir("steward-workdir-run-as-");
    chmodSync(shared, 0o755);
    const own = join(shared, "own");
    const closed = join(shared, "closed");
    const fence = join(shared, "fence");
    const behind = join(fence, "inner");
    const missing = join(shared, "missing");

    beforeAll(async () => {
      // An ordinary account (not --system): agents run no job as one below UID_MIN.
      uid = makeAccount(OWNER);
      mkdirSync(own, { mode: 0o700 });
      chownSync(own, uid, uid);
      for (const folder of [closed, fence, behind]) mkdirSync(folder, { mode: 0o700 });
      chmodSync(closed, 0o700);
      chmodSync(fence, 0o700);
      server = await startServerProcess();
      agent = await startAgentProcess({
        name: "inplace",
        slots: 2,
        servers: [server.url],
        joinToken: server.joinToken,
        args: ["--run-as-owner", "--shared", shared],
      });
      await waitFor(
        "the agent to say whom jobs run as",
        () => agent.output().includes("jobs run as the local account named like their owner"),
        15_000,
      );
    }, 60_000);

    afterAll(async () => {
      await agent?.crash();
      await server?.stop();
      removeAccount(OWNER);
      cleanup(shared, server?.data ?? "", agent?.work ?? "");
    });

    it("runs in a folder of its account's, writing there as that account", async () => {
      const id = await submitAs(server, OWNER, {
        command: "id -un > who; pwd >> who; echo done > result",
        workdir: own,
      });
      const job = await waitForJobEnd(server, id, 30_000);
      expect(job.state).toBe("succeeded");
      expect(readFileSync(join(own, "who"), "utf8")).toBe(`${OWNER}\n${own}\n`);
      expect(statSync(join(own, "result")).uid).toBe(uid);
      expect([statSync(own).uid, statSync(own).mode & 0o777]).toEqual([uid, 0o700]);
    });

    it.each<[string, string, (who: string) => string]>([
      [
        "a folder root alone may enter",
        closed,
        (who) => `working folder ${closed}: permission denied to ${who} (it may not enter the folder)`,
      ],
      [
        "a folder behind one the account may not pass",
        behind,
        (who) =>
          `working folder ${behind}: no such folder for ${who} (or a folder above it ${who} may not pass)`,
      ],
      [
        "a folder that is not there",
        missing,
        (who) =>
          `working folder ${missing}: no such folder for ${who} (or a folder above it ${who} may not pass)`,
      ],
    ])("fails on %s, naming it; root makes and changes nothing", async (_, folder, reason) => {
      const before = existsSync(folder) ? statSync(folder) : null;
      const id = await submitAs(server, OWNER, { command: "echo ran > ran", workdir: folder });
      const job = await waitForJobEnd(server, id, 30_000);
      expect(job.state).toBe("failed");
      const [attempt] = job.tasks[0].attempts;
      expect(attempt.outcome).toBe("failed");
      expect(attempt.reason).toBe(reason(`${OWNER} (uid ${uid})`));
      // The command never ran; root made nothing and changed nothing of the folder.
      if (before === null) expect(existsSync(folder)).toBe(false);
      else {
        const after = statSync(folder);
        expect([after.uid, after.gid, after.mode]).toEqual([before.uid, before.gid, before.mode]);
        expect(readdirSync(folder)).toEqual([]);
      }
    });
  },
);

// Issue 22, item 2, end to end on a run-as host: an agent run as root with --run-as-owner restores
// a restarted attempt's checkpoint before it hands the folder to the job's account. A manifest in
// the server's store whose path climbs out of the folder (a store tampered with, or one written
// before paths were checked) must not make root write there: the attempt fails, naming the path,
// and nothing appears outside the checkpoint folder. Needs root, useradd and setpriv (as
// test/integration/run-as.test.ts): without them the file fails under CI and skips elsewhere.

import { chmodSync, existsSync, readdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { DatabaseSync } from "node:sqlite";
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeRunAs, makeAccount, removeAccount } from "../helpers/local-accounts.ts";
import {
  type AgentProcess,
  cleanup,
  getJob,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
} from "../helpers/steward.ts";

// An account of this file's own: the run-as tests of other files make and remove theirs.
const OWNER = "stwmanifest1";

describeRunAs(
  "the run-as checkpoint tests",
  "a --run-as-owner host restores a checkpoint only inside its folder",
  () => {
    let server: StewardProcess & { joinToken: string };
    let agent: AgentProcess;
    const dir = tempDir("steward-manifest-run-as-");
    // Passable by all: the job (as its account) looks here for the file that lets it end.
    chmodSync(dir, 0o755);
    const go = join(dir, "go");
    const escaped = join(dir, "escaped");

    beforeAll(async () => {
      // An ordinary account (not --system): agents run no job as one below UID_MIN.
      makeAccount(OWNER);
      server = await startServerProcess();
      agent = await startAgentProcess({
        name: "manifest",
        slots: 2,
        servers: [server.url],
        joinToken: server.joinToken,
        args: ["--run-as-owner"],
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
      cleanup(dir, server?.data ?? "", agent?.work ?? "");
    });

    it("a stored manifest whose path climbs out fails the restart, and root writes nothing there", async () => {
      const response = await fetch(`${server.url}/api/v1/jobs`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${server.token}`,
          "content-type": "application/json",
          "x-steward-user": OWNER,
        },
        body: JSON.stringify({
          retry: { maxAttempts: 2, backoffSeconds: 0 },
          checkpoint: { intervalSeconds: 1, graceSeconds: 5 },
          command: [
            `if [ -f "$STEWARD_CHECKPOINT_DIR/state" ]; then echo restored; exit 0; fi`,
            `echo saved > "$STEWARD_CHECKPOINT_DIR/state.tmp" && mv "$STEWARD_CHECKPOINT_DIR/state.tmp" "$STEWARD_CHECKPOINT_DIR/state"`,
            `while [ ! -f ${go} ]; do sleep 0.2; done`,
            "exit 1",
          ].join("\n"),
        }),
      });
      expect(response.status).toBe(201);
      const { id } = (await response.json()) as { id: string };
      const generation = await waitFor(
        "the first checkpoint",
        async () => (await getJob(server, id)).tasks[0].checkpoint?.generation ?? null,
        20_000,
      );

      // The store's manifest (its record) is rewritten to name a path as deep as the root, then
      // into `escaped`, while the server is down: it reads its records again as it starts.
      await server.stop();
      const db = new DatabaseSync(join(server.data, "steward.db"));
      const row = db
        .prepare("SELECT files FROM checkpoint_parts WHERE job_id = ? AND task_index = 0 AND generation = ?")
        .get(id, generation) as { files: string };
      const files = JSON.parse(row.files) as { path: string }[];
      expect(files.map((file) => file.path)).toEqual(["state"]);
      const climbing = `${"../".repeat(40)}${escaped.slice(1)}/cron-x`;
      files[0].path = climbing;
      db.prepare(
        "UPDATE checkpoint_parts SET files = ? WHERE job_id = ? AND task_index = 0 AND generation = ?",
      ).run(JSON.stringify(files), id, generation);
      db.close();
      server = await startServerProcess({ data: server.data, port: server.port });
      writeFileSync(go, "", { mode: 0o644 });

      const second = await waitFor(
        "the restarted attempt to end",
        async () => {
          const attempt = (await getJob(server, id)).tasks[0].attempts[1];
          return attempt?.outcome ? attempt : null;
        },
        30_000,
      );
      await fetch(`${server.url}/api/v1/jobs/${id}/cancel`, {
        method: "POST",
        headers: { authorization: `Bearer ${server.token}`, "content-type": "application/json" },
        body: "{}",
      });
      // Root wrote nothing outside the checkpoint folder: not the file, not the folders to it.
      expect(existsSync(escaped)).toBe(false);
      expect(readdirSync(dir)).toEqual(["go"]);
      // The attempt did not start from a checkpoint it could not restore; its reason names the path.
      expect(second.outcome).toBe("lost");
      expect(second.reason).toContain("checkpoint");
      expect(second.reason).toContain(JSON.stringify(climbing).slice(0, 30));
    }, 90_000);
  },
);

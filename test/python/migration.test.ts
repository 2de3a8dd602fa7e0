// The Python job SDK in real jobs: examples/python (a Monte Carlo pi that checkpoints after each
// chunk) migrated mid-run to the other host resumes from its checkpoint and ends with the very
// estimate of a run that was never stopped; a gang of Python ranks commits the generations they
// declare.

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { parse } from "yaml";
import {
  api,
  cleanup,
  ROOT,
  type StewardProcess,
  startUp,
  tempDir,
  waitForJobEnd,
} from "../helpers/steward.ts";
import { describePython, runPython, SCRIPTS } from "./python.ts";

const EXAMPLE = join(ROOT, "examples/python");
/** Small enough for a test, with a rest after each chunk so that the migration lands mid-run. */
const ENV = { CHUNKS: "40", POINTS: "40000", SEED: "7" };

let server: StewardProcess;
const work = tempDir("steward-python-pi-");

describePython("a Python job that checkpoints", () => {
  beforeAll(async () => {
    server = await startUp({ agents: 2, args: ["--heartbeat-seconds", "1"] });
  });

  afterAll(async () => {
    await server?.stop();
    cleanup(work, server?.data ?? "");
  });

  it("migrated mid-run, resumes on the other host with the same result", async () => {
    const spec = parse(readFileSync(join(EXAMPLE, "job.yaml"), "utf8"));
    spec.env = { ...spec.env, ...ENV, PAUSE: "0.1" };
    writeFileSync(join(work, "job.json"), JSON.stringify(spec));
    // The same computation outside Steward, never stopped: the estimate to expect.
    const alone = join(work, "alone");
    mkdirSync(alone);
    const [run, reference] = await Promise.all([
      runPython([join(SCRIPTS, "migrate_pi.py"), join(work, "job.json"), EXAMPLE], {
        STEWARD_URL: server.url,
        STEWARD_TOKEN: server.token,
        WORK: work,
      }),
      runPython([join(EXAMPLE, "pi.py")], ENV, alone),
    ]);
    expect(reference.code, reference.stderr).toBe(0);
    expect(run.code, run.stderr).toBe(0);
    const seen = JSON.parse(run.stdout);
    expect(seen.state).toBe("succeeded");
    const [first, second] = seen.attempts;
    expect(first).toMatchObject({ outcome: "migrated", restarted: false });
    expect(second).toMatchObject({ outcome: "succeeded", restarted: true });
    expect(second.host).not.toBe(first.host);
    expect(seen.first).toMatch(/^starting: 40 chunks/);
    expect(seen.first).toMatch(/stop requested: saved chunk (\d+)/);
    const saved = Number(/stop requested: saved chunk (\d+)/.exec(seen.first)![1]);
    const resumed = /^resuming at chunk (\d+) of 40 \(restarted=True\)/.exec(seen.second);
    expect(resumed, seen.second).not.toBeNull();
    expect(Number(resumed![1])).toBe(saved);
    expect(saved).toBeGreaterThanOrEqual(5);
    expect(seen.result).toBe(readFileSync(join(alone, "pi.txt"), "utf8"));
    expect(seen.result).toMatch(/^3\.1\d+ from \d+ hits of 1600000 points\n$/);
  }, 120_000);

  it("a gang's ranks declare their checkpoint generations with checkpoint_generation", async () => {
    const rankScript = [
      "import json, time",
      "from steward import job",
      "g = job.gang()",
      "for generation in (1, 2, 3):",
      "    job.save_checkpoint({'rank': g['rank'], 'generation': generation})",
      "    job.checkpoint_generation(generation)",
      "    time.sleep(0.8)",
      "print(json.dumps(g))",
    ].join("\n");
    const { id } = await api(server, "POST", "/api/v1/jobs", {
      name: "py-gang",
      command: ["python3", "-c", rankScript],
      nodes: 2,
      checkpoint: { intervalSeconds: 1 },
    });
    const job = await waitForJobEnd(server, id, 60_000);
    expect(job.state).toBe("succeeded");
    expect(job.tasks[0].checkpoint?.generation).toBe(3);
    for (const rank of [0, 1]) {
      const response = await fetch(`${server.url}/api/v1/jobs/${id}/logs?rank=${rank}`, {
        headers: { authorization: `Bearer ${server.token}` },
      });
      const seen = JSON.parse(await response.text());
      expect(seen).toMatchObject({ rank, count: 2, coordinator: expect.stringMatching(/:\d+$/) });
      expect(seen.nodes).toHaveLength(2);
    }
  }, 90_000);
});

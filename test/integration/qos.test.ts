// The sharing policy with real processes (a server with a QoS file, one agent, tokens of several
// users): a job's priority orders its owner's own jobs only, neither overtaking nor preempting
// another user's job; a tier that preempts `normal` does, under the GrADS rules; a tier a token
// does not allow is refused at submit; a queued-task limit answers 429 naming the limit and the
// use; a running-CPU limit holds a user's job back, explain says why, and it starts once the
// user's running job has ended.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import {
  type AgentProcess,
  api,
  cleanup,
  cli,
  getJob,
  type JobJson,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

const QOS_FILE = `
tiers:
  normal: {}
  high:
    priority: 10
    preempt: [normal]
  batch:
    maxRunningCpus: 1
    maxQueuedTasks: 3
`;

type Server = StewardProcess & { joinToken: string };
let server: Server | undefined;
let agent: AgentProcess | undefined;
let files: string | undefined;

async function start(slots: number): Promise<Server> {
  files = tempDir("steward-qos-");
  const qos = join(files, "qos.yaml");
  writeFileSync(qos, QOS_FILE);
  server = await startServerProcess({
    heartbeatSeconds: 1,
    hostTimeoutSeconds: 5,
    args: ["--qos", qos, "--preempt-wait-seconds", "5"],
  });
  agent = await startAgentProcess({ name: "q1", slots, servers: [server.url], joinToken: server.joinToken });
  const running = server;
  await waitFor("the host", async () => (await api(running, "GET", "/api/v1/hosts")).length === 1);
  return server;
}

afterEach(async () => {
  await agent?.crash();
  await server?.stop();
  cleanup(...(agent ? [agent.work] : []), ...(server ? [server.data] : []), ...(files ? [files] : []));
  agent = undefined;
  server = undefined;
  files = undefined;
});

/** A user's token made with `steward token create`, as a server handle of that user. */
async function userOf(s: Server, user: string, qos?: string): Promise<{ url: string; token: string }> {
  const made = await cli(s, ["token", "create", "--user", user, ...(qos ? ["--qos", qos] : []), "--json"]);
  expect(made.code, made.stderr).toBe(0);
  return { url: s.url, token: (JSON.parse(made.stdout) as { token: string }).token };
}

async function submit(as: { url: string; token: string }, spec: unknown): Promise<string> {
  return ((await api(as, "POST", "/api/v1/jobs", spec)) as { id: string }).id;
}

/** A counter of `steps` steps of `stepSeconds`, its count checkpointed, its progress reported. */
function counter(name: string, steps: number, stepSeconds: number) {
  return {
    name,
    command: [
      'state="$STEWARD_CHECKPOINT_DIR/count"',
      'i=$(cat "$state" 2>/dev/null || echo 0)',
      `while [ "$i" -lt ${steps} ]; do`,
      `  sleep ${stepSeconds}`,
      "  i=$((i + 1))",
      '  echo "$i" > "$state.tmp" && mv "$state.tmp" "$state"',
      `  echo "$i" | awk '{ print $1 / ${steps} }' > "$STEWARD_PROGRESS_FILE"`,
      "done",
    ].join("\n"),
    checkpoint: { intervalSeconds: 1, graceSeconds: 5 },
  };
}

const startedAt = (job: JobJson) => Date.parse(job.tasks[0].attempts[0].startedAt);
const isRunning = (job: JobJson) => job.tasks[0].attempts.some((attempt) => attempt.state === "running");

describe("sharing policy", () => {
  it("a server with a bad QoS file does not start, naming the line and the key", async () => {
    files = tempDir("steward-qos-");
    const qos = join(files, "qos.yaml");
    writeFileSync(qos, "tiers:\n  normal: {}\n  high:\n    priority: 5\n    preempt: [normal, gold]\n");
    const started = await cli(null, ["server", "--data", join(files, "data"), "--port", "0", "--qos", qos]);
    expect(started.code).not.toBe(0);
    expect(started.stderr).toContain(
      `--qos ${qos}: line 5: tiers.high.preempt[1]: no tier gold (tiers: normal, high)`,
    );
  });

  it("a priority of 1,000,000 overtakes its owner's jobs only, never another user's", async () => {
    const s = await start(1);
    const alice = await userOf(s, "alice");
    const bob = await userOf(s, "bob");
    // The slot is busy with a third user's job while the others queue (shares stay equal: 0, 0).
    const blocker = await submit(s, { name: "blocker", command: "sleep 4" });
    await waitFor("the blocker to run", async () => isRunning(await getJob(s, blocker)), 15_000, 100);
    const bobs = await submit(bob, { name: "bob", command: "sleep 1" });
    const aliceLow = await submit(alice, { name: "alice-low", command: "sleep 1" });
    const aliceHigh = await submit(alice, { name: "alice-high", priority: 1_000_000, command: "sleep 1" });
    const ends = await Promise.all([bobs, aliceHigh, aliceLow].map((id) => waitForJobEnd(s, id, 60_000)));
    expect(ends.map((job) => job.state)).toStrictEqual(["succeeded", "succeeded", "succeeded"]);
    const [b, high, low] = ends.map(startedAt);
    // bob's job was submitted first: alice's 1,000,000 does not put hers before it...
    expect(b).toBeLessThan(high);
    // ...but it does put it before her own older job.
    expect(high).toBeLessThan(low);
    expect(ends.map((job) => job.qos)).toStrictEqual(["normal", "normal", "normal"]);
  });

  it("steward update --qos moves a queued job to another tier's band; a tier its owner may not use is refused", async () => {
    const s = await start(1);
    const alice = await userOf(s, "alice");
    const bob = await userOf(s, "bob");
    const carol = await userOf(s, "carol", "normal,high");
    const blocker = await submit(s, { name: "blocker", command: "sleep 3" });
    await waitFor("the blocker to run", async () => isRunning(await getJob(s, blocker)), 15_000, 100);
    const bobs = await submit(bob, { name: "bob", command: "sleep 1" });
    const carols = await submit(carol, { name: "carol", command: "sleep 1" });
    const alices = await submit(alice, { name: "alice", command: "sleep 1" });

    // alice's token allows normal only: refused naming it, her job unchanged (API and CLI).
    const refused = await api(alice, "PATCH", `/api/v1/jobs/${alices}`, { qos: "high" }).catch(
      (error: { status: number; body: unknown }) => error,
    );
    expect(refused).toMatchObject({
      status: 400,
      body: { error: { message: "qos: user alice may not use QoS high; their token allows normal" } },
    });
    const viaCli = await cli(alice, ["update", alices, "--qos", "high"]);
    expect(viaCli.code).not.toBe(0);
    expect(viaCli.stderr).toContain("user alice may not use QoS high; their token allows normal");
    expect((await getJob(s, alices)).qos).toBe("normal");

    // carol's may: her job, submitted after bob's, now goes first.
    const updated = await cli(carol, ["update", carols, "--qos", "high"]);
    expect(updated.code, updated.stderr).toBe(0);
    expect(updated.stdout).toContain("QoS high");
    const ends = await Promise.all([bobs, carols, alices].map((id) => waitForJobEnd(s, id, 60_000)));
    expect(ends.map((job) => job.state)).toStrictEqual(["succeeded", "succeeded", "succeeded"]);
    const [b, c] = ends.map(startedAt);
    expect(c).toBeLessThan(b);
    expect(ends[1].qos).toBe("high");
    expect(ends[1].events.map((event) => event.message)).toContain("updated by carol: qos normal -> high");
  });

  it("priority does not preempt another user's job; a tier that preempts normal does; a tier not allowed is refused", async () => {
    const s = await start(1);
    const alice = await userOf(s, "alice");
    const bob = await userOf(s, "bob");
    const carol = await userOf(s, "carol", "normal,high");
    // bob's checkpointing job, 15 s, past 20 % and checkpointed: preemptible under the GrADS rules.
    const victim = await submit(bob, counter("bob-counter", 60, 0.25));
    await waitFor(
      "bob's job past 25 % with a checkpoint",
      async () => {
        const job = (await getJob(s, victim)) as JobJson & {
          tasks: { progress: { fraction: number } | null; checkpoint: unknown }[];
        };
        return (job.tasks[0].progress?.fraction ?? 0) >= 0.25 && job.tasks[0].checkpoint !== null;
      },
      30_000,
    );

    // alice may not use high: refused at submit, naming what her token allows (API and CLI).
    const refused = await submit(alice, { command: "true", qos: "high" }).catch(
      (error: { status: number; body: unknown }) => error,
    );
    expect(refused).toMatchObject({
      status: 400,
      body: { error: { message: "qos: user alice may not use QoS high; their token allows normal" } },
    });
    const jobFile = join(files!, "high.json");
    writeFileSync(jobFile, JSON.stringify({ command: "true", qos: "high" }));
    const viaCli = await cli(alice, ["submit", jobFile]);
    expect(viaCli.code).not.toBe(0);
    expect(viaCli.stderr).toContain("user alice may not use QoS high; their token allows normal");
    // A dry run says so too, making nothing.
    const dryRun = await cli(alice, ["submit", "--dry-run", jobFile]);
    expect(dryRun.code).not.toBe(0);
    expect(dryRun.stderr).toContain("user alice may not use QoS high; their token allows normal");
    // And `steward run --qos`, naming the flag.
    const run = await cli(alice, ["run", "--qos", "high", "--detach", "--", "true"]);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain("--qos: user alice may not use QoS high; their token allows normal");

    // alice's priority 1,000,000 in normal: it waits, bob's job is not stopped.
    const pushy = await submit(alice, { name: "pushy", priority: 1_000_000, command: "true" });
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const bobNow = await getJob(s, victim);
    expect(bobNow.tasks[0].attempts).toHaveLength(1);
    expect(bobNow.tasks[0].attempts[0].state).toBe("running");
    expect((await getJob(s, pushy)).state).toBe("pending");
    const why = await cli(alice, ["explain", pushy]);
    expect(why.stdout).toContain(
      "no task it may preempt (the same user's of a lower priority, or of a tier its QoS tier preempts) would make room",
    );

    // carol's job of tier high preempts bob's normal job.
    const urgent = await submit(carol, { name: "urgent", qos: "high", command: "sleep 1" });
    const done = await waitForJobEnd(s, urgent, 30_000);
    expect(done.state).toBe("succeeded");
    expect(done.qos).toBe("high");
    await api(alice, "POST", `/api/v1/jobs/${pushy}/cancel`);
    const bobEnd = await waitForJobEnd(s, victim, 90_000);
    expect(bobEnd.state).toBe("succeeded");
    const preempted = bobEnd.tasks[0].attempts.filter((attempt) => attempt.outcome === "preempted");
    expect(preempted).toHaveLength(1);
    expect(preempted[0].reason).toBe(`preempted for job ${urgent} (QoS high, priority 0)`);
  });

  it("a queued-task limit answers 429; a running-CPU limit holds jobs until the user's running job ends", async () => {
    const s = await start(3);
    const dave = await userOf(s, "dave", "batch");
    const first = await submit(dave, { name: "first", qos: "batch", command: "sleep 4" });
    await waitFor("the first job to run", async () => isRunning(await getJob(s, first)), 15_000, 100);
    const second = await submit(dave, { name: "second", qos: "batch", command: "true" });

    // Two slots are free, but dave holds the 1 running CPU batch allows him.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect((await getJob(s, second)).state).toBe("pending");
    const why = await cli(dave, ["explain", second]);
    expect(why.stdout).toContain(
      "user dave is at the limit of 1 running CPUs of QoS batch (1 running, a task needs 1)",
    );

    // 2 tasks not ended in batch, the limit 3: an array of 2 is refused, naming both.
    const message =
      "user dave has 2 tasks queued (not ended) in QoS batch and the limit is 3; this job adds 2";
    const over = await submit(dave, { qos: "batch", command: "true", array: { count: 2 } }).catch(
      (error: { status: number; body: unknown }) => error,
    );
    expect(over).toMatchObject({ status: 429, body: { error: { code: "quota", message } } });
    const jobFile = join(files!, "array.json");
    writeFileSync(jobFile, JSON.stringify({ qos: "batch", command: "true", array: { count: 2 } }));
    const viaCli = await cli(dave, ["submit", jobFile]);
    expect(viaCli.code).not.toBe(0);
    expect(viaCli.stderr).toContain(message);
    // Nothing was made by the refused submits.
    expect((await api(dave, "GET", "/api/v1/jobs")).length).toBe(2);

    const [firstEnd, secondEnd] = await Promise.all([waitForJobEnd(s, first), waitForJobEnd(s, second)]);
    expect(secondEnd.state).toBe("succeeded");
    expect(startedAt(secondEnd)).toBeGreaterThanOrEqual(Date.parse(firstEnd.tasks[0].attempts[0].endedAt!));
  });
});

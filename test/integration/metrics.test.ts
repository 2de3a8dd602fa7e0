// The Prometheus series of the work, with real processes: a server and an agent (two slots, GPUs
// 0 and 1 declared) run jobs that succeed, fail, run out of memory, migrate and get preempted;
// /metrics then gives each series with its pool and owner labels and the values those jobs make:
// attempts by outcome, preemptions, migrations, out-of-memory kills, the queue wait histogram,
// slots and GPUs used and free (while a GPU job runs, and after), owners' slots and GPUs, jobs and
// hosts by state. The out-of-memory job needs enforcement (root, cgroups): without it the test is
// skipped saying why, and fails under CI.

import { afterAll, beforeAll, expect, it } from "vitest";
import { enforcementUnavailable, skipUnlessEnforced } from "../helpers/agent-cgroups.ts";
import { rawHello } from "../helpers/raw-agent.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  getJob,
  type JobJson,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

const unavailable = enforcementUnavailable();
let server: (StewardProcess & { joinToken: string }) | undefined;
let agent: AgentProcess | undefined;

beforeAll(async () => {
  if (unavailable) return;
  server = await startServerProcess({ args: ["--preempt-wait-seconds", "5"] });
  agent = await startAgentProcess({
    name: "m1",
    slots: 2,
    servers: [server.url],
    joinToken: server.joinToken,
    args: ["--gpus", "0,1"],
  });
  await waitFor("the agent connected", async () => (await api(server!, "GET", "/api/v1/hosts")).length === 1);
});

afterAll(async () => {
  await agent?.crash();
  await server?.stop();
  cleanup(server?.data ?? "", agent?.work ?? "");
});

/** One sample of the text format: its series name, labels and value. */
interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a scrape (comments and blank lines skipped). */
function parseMetrics(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const label of (match[2] ?? "").matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g))
      labels[label[1]] = label[2];
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

async function scrape(s: StewardProcess): Promise<Sample[]> {
  const response = await fetch(`${s.url}/metrics`, { headers: { authorization: `Bearer ${s.token}` } });
  expect(response.status).toBe(200);
  return parseMetrics(await response.text());
}

/** The samples of one series, as `label=value,...` (labels sorted) to value. */
function series(samples: Sample[], name: string): Record<string, number> {
  const found: Record<string, number> = {};
  for (const sample of samples.filter((each) => each.name === name)) {
    const key = Object.entries(sample.labels)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([label, value]) => `${label}=${value}`)
      .join(",");
    found[key] = sample.value;
  }
  return found;
}

async function submit(s: StewardProcess, spec: unknown): Promise<string> {
  return ((await api(s, "POST", "/api/v1/jobs", spec)) as { id: string }).id;
}

/** A submit on ann's behalf (the admin token may name the owner). */
async function submitAsAnn(s: StewardProcess, spec: unknown): Promise<string> {
  const response = await fetch(`${s.url}/api/v1/jobs`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${s.token}`,
      "x-steward-user": "ann",
      "content-type": "application/json",
    },
    body: JSON.stringify(spec),
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { id: string }).id;
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

const running = (job: JobJson) => job.tasks[0].attempts.some((attempt) => attempt.state === "running");

it("gives each series of the work with its pool and owner labels and the values the jobs made", async (context) => {
  skipUnlessEnforced(context, unavailable);
  const s = server!;

  // Ends of their own: one succeeds; one fails and one runs out of memory, both ann's.
  const ok = await submit(s, { command: "true" });
  const failing = await submitAsAnn(s, { command: "exit 3" });
  const hog = await submitAsAnn(s, {
    command: ["python3", "-c", "import time; x = bytearray(200 * 2**20); time.sleep(5)"],
    resources: { memoryMb: 50 },
  });
  expect((await waitForJobEnd(s, ok, 30_000)).state).toBe("succeeded");
  expect((await waitForJobEnd(s, failing, 30_000)).state).toBe("failed");
  const oom = await waitForJobEnd(s, hog, 30_000);
  expect(oom.state).toBe("failed");
  expect(oom.tasks[0].attempts[0].reason).toBe("out of memory: limit 50 MB reached");
  expect((await getJob(s, hog)).owner).toBe("ann");
  const owner = (await getJob(s, ok)).owner;
  const at = (labels: string) => labels.replaceAll("OWNER", owner);

  // A GPU job while it runs: a slot and a GPU used of two, both the owner's.
  const gpuJob = await submit(s, { command: "sleep 300", resources: { gpus: 1 } });
  await waitFor("the GPU job running", async () => running(await getJob(s, gpuJob)));
  let samples = await scrape(s);
  expect(series(samples, "steward_slots")).toEqual({
    "pool=default,state=used": 1,
    "pool=default,state=free": 1,
  });
  expect(series(samples, "steward_gpus")).toEqual({
    "pool=default,state=used": 1,
    "pool=default,state=free": 1,
  });
  expect(series(samples, "steward_owner_slots_used")).toEqual({ [at("owner=OWNER")]: 1 });
  expect(series(samples, "steward_owner_gpus_used")).toEqual({ [at("owner=OWNER")]: 1 });
  expect(series(samples, "steward_jobs")).toMatchObject({ "state=running": 1 });

  // Migrated by hand to a host that joins for it and has no GPU (the task waits for it: a
  // migration with nowhere to go would be refused), then cancelled; the host leaves.
  const spare = await rawHello(s.url, { name: "spare", token: s.joinToken, slots: 1 });
  try {
    await api(s, "POST", `/api/v1/jobs/${gpuJob}/migrate`, { to: "spare" });
    await waitFor(
      "the attempt migrated",
      async () => (await getJob(s, gpuJob)).tasks[0].attempts[0].outcome === "migrated",
    );
    await api(s, "POST", `/api/v1/jobs/${gpuJob}/cancel`);
  } finally {
    spare.ws.close();
  }
  // Forgotten once it is gone, as `steward hosts rm` does: the host series below count m1 alone.
  await waitFor("the spare host forgotten", async () =>
    api(s, "DELETE", "/api/v1/hosts/spare").then(
      () => true,
      () => null,
    ),
  );
  expect((await waitForJobEnd(s, gpuJob, 30_000)).state).toBe("cancelled");

  // Two low jobs hold both slots past 20 %; a high one stops one of them, which resumes later.
  const lows = [await submit(s, counter("low-1", 40, 0.25)), await submit(s, counter("low-2", 40, 0.25))];
  await waitFor(
    "both low jobs past 25 % with a checkpoint",
    async () => {
      const jobs = (await Promise.all(lows.map((id) => getJob(s, id)))) as (JobJson & {
        tasks: { progress: { fraction: number } | null; checkpoint: unknown }[];
      })[];
      return jobs.every((job) => (job.tasks[0].progress?.fraction ?? 0) >= 0.25 && job.tasks[0].checkpoint);
    },
    30_000,
  );
  const high = await submit(s, { name: "high", priority: 10, command: "sleep 1" });
  const ends = await Promise.all([high, ...lows].map((id) => waitForJobEnd(s, id, 90_000)));
  expect(ends.map((job) => job.state)).toEqual(["succeeded", "succeeded", "succeeded"]);
  const preempted = ends.flatMap((job) => job.tasks[0].attempts).filter((a) => a.outcome === "preempted");
  expect(preempted).toHaveLength(1);

  samples = await scrape(s);
  expect(series(samples, "steward_attempts_ended_total")).toEqual({
    [at("outcome=succeeded,owner=OWNER,pool=default")]: 4,
    "outcome=failed,owner=ann,pool=default": 2,
    [at("outcome=migrated,owner=OWNER,pool=default")]: 1,
    [at("outcome=preempted,owner=OWNER,pool=default")]: 1,
  });
  expect(series(samples, "steward_preemptions_total")).toEqual({ [at("owner=OWNER,pool=default")]: 1 });
  expect(series(samples, "steward_migrations_total")).toEqual({ [at("owner=OWNER,pool=default")]: 1 });
  expect(series(samples, "steward_oom_kills_total")).toEqual({ "owner=ann,pool=default": 1 });

  // Eight placements: ann's two; ok, the GPU job, both low jobs, high, and the preempted one again.
  const labels = at("owner=OWNER,pool=default");
  expect(series(samples, "steward_queue_wait_seconds_count")).toEqual({
    [labels]: 6,
    "owner=ann,pool=default": 2,
  });
  const buckets = series(samples, "steward_queue_wait_seconds_bucket");
  expect(buckets[`le=+Inf,${labels}`]).toBe(6);
  // Cumulative, and none of these waited a day.
  const bounds = Object.keys(buckets).map((key) => /le=([^,]+)/.exec(key)![1]);
  expect(bounds).toContain("86400");
  expect(buckets[`le=86400,${labels}`]).toBe(6);
  expect(buckets["le=86400,owner=ann,pool=default"]).toBe(2);
  const sum = series(samples, "steward_queue_wait_seconds_sum")[labels];
  expect(sum).toBeGreaterThan(0);
  expect(sum).toBeLessThan(600);

  // Nothing runs now: every slot and GPU free, no owner holds any.
  expect(series(samples, "steward_slots")).toEqual({
    "pool=default,state=used": 0,
    "pool=default,state=free": 2,
  });
  expect(series(samples, "steward_gpus")).toEqual({
    "pool=default,state=used": 0,
    "pool=default,state=free": 2,
  });
  expect(series(samples, "steward_owner_slots_used")).toEqual({});
  expect(series(samples, "steward_owner_gpus_used")).toEqual({});
  expect(series(samples, "steward_jobs")).toMatchObject({
    "state=succeeded": 4,
    "state=failed": 2,
    "state=cancelled": 1,
  });
  const hosts = (await api(s, "GET", "/api/v1/hosts")) as { state: string }[];
  expect(series(samples, "steward_hosts")).toEqual({ [`state=${hosts[0].state}`]: 1 });
  expect(series(samples, "steward_jobs_submitted_total")).toEqual({ "": 7 });
  // The store's commits: as many observed as made, each answering at least one step, every submit
  // among the steps; each commit's time is in its histogram, up to the +Inf bucket.
  const commits = series(samples, "steward_store_commits")[""];
  expect(commits).toBeGreaterThan(0);
  expect(series(samples, "steward_store_commit_seconds_count")).toEqual({ "": commits });
  expect(series(samples, "steward_store_commit_seconds_bucket")["le=+Inf"]).toBe(commits);
  expect(series(samples, "steward_store_commit_seconds_sum")[""]).toBeGreaterThan(0);
  expect(series(samples, "steward_store_commit_steps_count")).toEqual({ "": commits });
  expect(series(samples, "steward_store_commit_steps_sum")[""]).toBeGreaterThanOrEqual(Math.max(commits, 7));
});

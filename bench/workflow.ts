// A fan-out/fan-in workflow of 10,000 `true` jobs (one root, 9,998 middle jobs waiting for it, one
// sink waiting for all of them) on a `steward server` and one `steward agent` of 4 slots (separate
// processes, so that the server's CPU time is the broker's alone), against the same slots' own
// limit: an array of 10,000 `true` tasks on a fresh server and agent of the same shape, whose tasks
// need no decision between them (no dependency, one job). What the workflow takes beyond the array,
// per job, is the scheduling overhead of its jobs: their atomic creation, a job's dependencies
// looked at when another ends, each job placed and ended as a job of its own. Measured as the
// broker's CPU time (the headline) and as wall time (which the agent's per-job work also lengthens);
// also against xargs (`raw`), the slots with no Steward at all.

import type { AccountingRow } from "../src/common/api/accounting.ts";
import type { Api } from "./api.ts";
import { type Benchmark, figure, round, since } from "./benchmark.ts";
import { type Cluster, startCluster } from "./steward-cluster.ts";
import { processCpuSeconds } from "./steward-process.ts";
import { XARGS_PARALLEL } from "./xargs.ts";

const JOBS = 10_000;
const SLOTS = XARGS_PARALLEL;
const POLL_MS = 100;
const TIMEOUT_MS = 15 * 60_000;
const ENDED = new Set(["succeeded", "failed", "cancelled"]);

/** The workflow file: root, m1..m9998, sink. */
export function fanOutFanIn(jobs: number): { name: string; jobs: Record<string, unknown> } {
  const middle: string[] = [];
  const file: Record<string, unknown> = { root: { command: ["true"] } };
  for (let i = 1; i <= jobs - 2; i++) {
    const name = `m${i}`;
    middle.push(name);
    file[name] = { command: ["true"], dependsOn: ["root"] };
  }
  file.sink = { command: ["true"], dependsOn: middle };
  return { name: "bench-fan", jobs: file };
}

interface Run {
  /** From the submit request to the last attempt's start (ms). */
  lastStartMs: number;
  submitMs: number;
  rows: AccountingRow[];
  /** The server's CPU seconds (user + system) from the submit to the last job's end. */
  brokerCpuSeconds: number | null;
}

/**
 * Waits until the job `last` has ended (the sink, which waits for every other job, or the array);
 * answers the ended attempts (from accounting: the fresh server holds this run's only).
 */
async function waitAll(
  api: Api,
  last: string,
  start: number,
  label: string,
  progress: (message: string) => void,
): Promise<AccountingRow[]> {
  let lastReport = performance.now();
  for (;;) {
    const job = await api.job(last);
    if (ENDED.has(job.state)) break;
    if (since(start) > TIMEOUT_MS) throw new Error(`${label}: job ${last} still ${job.state}`);
    if (performance.now() - lastReport > 5000) {
      lastReport = performance.now();
      progress(`${label}: ${round(since(start) / 1000)} s, waiting for job ${last} (${job.state})`);
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  const rows = (await api.request<AccountingRow[]>("GET", "/api/v1/accounting?limit=100000")).body;
  const bad = rows.filter((row) => row.outcome !== "succeeded");
  if (bad.length > 0) throw new Error(`${label}: ${bad.length} attempts did not succeed`);
  if (rows.length !== JOBS) throw new Error(`${label}: ${rows.length} attempts, not ${JOBS}`);
  return rows;
}

/** Runs `submit` on a fresh server and agent; times it from the submit to the last attempt's start. */
async function runOn(
  label: string,
  options: { cpuProf: boolean; keep: boolean },
  progress: (message: string) => void,
  submit: (api: Api) => Promise<string>,
): Promise<Run> {
  const cluster: Cluster = await startCluster({
    label,
    agents: 1,
    slots: SLOTS,
    cpuProf: options.cpuProf,
    keep: options.keep,
  });
  try {
    await cluster.waitForHosts();
    const cpuBefore = processCpuSeconds(cluster.serverPid);
    const startWall = Date.now();
    const start = performance.now();
    const last = await submit(cluster.api);
    const submitMs = since(start);
    progress(`${label}: submitted in ${round(submitMs)} ms`);
    const rows = await waitAll(cluster.api, last, start, label, progress);
    const cpuAfter = processCpuSeconds(cluster.serverPid);
    const lastStart = Math.max(...rows.map((row) => Date.parse(row.startedAt)));
    return {
      rows,
      submitMs,
      lastStartMs: lastStart - startWall,
      brokerCpuSeconds:
        cpuBefore && cpuAfter ? cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system : null,
    };
  } finally {
    await cluster.stop();
  }
}

export const workflowBenchmark: Benchmark = {
  name: "workflow",
  description: `a fan-out/fan-in workflow of ${JOBS} \`true\` jobs on a server and 1 agent of ${SLOTS} slots: the broker's CPU and the wall time a job, against an array of ${JOBS} tasks`,
  needs: ["xargs"],
  async run({ options, results, progress }) {
    let jobs: Record<string, string> = {};
    const flow = await runOn("workflow", options, progress, async (api) => {
      const answer = await api.request<{ jobs: Record<string, string> }>(
        "POST",
        "/api/v1/workflows",
        fanOutFanIn(JOBS),
      );
      if (answer.status !== 201) throw new Error(`workflow submit answered ${answer.status}`);
      jobs = answer.body.jobs;
      return jobs.sink;
    });
    const array = await runOn("workflow-array", options, progress, (api) =>
      api.submit({ name: "bench-fan-array", command: ["true"], array: { count: JOBS } }),
    );
    const byJob = new Map(flow.rows.map((row) => [row.job, row]));
    const root = byJob.get(jobs.root)!;
    const sink = byJob.get(jobs.sink)!;
    const middle = flow.rows.filter((row) => row.job !== jobs.root && row.job !== jobs.sink);
    const middleStarts = middle.map((row) => Date.parse(row.startedAt));
    const middleEnds = middle.map((row) => Date.parse(row.endedAt));
    const rootEnd = Date.parse(root.endedAt);
    const lastMiddleEnd = Math.max(...middleEnds);
    const xargsRate = figure(results, "raw.xargsTasksPerSecond");
    const xargsMs = typeof xargsRate === "number" ? (JOBS / xargsRate) * 1000 : null;
    const overArrayMs = flow.lastStartMs - array.lastStartMs;
    progress(
      `workflow: last start after ${round(flow.lastStartMs)} ms; array: ${round(array.lastStartMs)} ms; ` +
        `${round(overArrayMs / JOBS, 3)} ms a job beyond the array`,
    );
    const brokerOver =
      flow.brokerCpuSeconds === null || array.brokerCpuSeconds === null
        ? null
        : ((flow.brokerCpuSeconds - array.brokerCpuSeconds) * 1000) / JOBS;
    return {
      workflow: {
        jobs: JOBS,
        slots: SLOTS,
        // The headline: the broker's CPU time a job beyond what the array's tasks cost it.
        overheadMsPerJob: brokerOver === null ? null : round(brokerOver, 3),
        targetMsPerJob: 1,
        brokerCpuMsPerJob:
          flow.brokerCpuSeconds === null ? null : round((flow.brokerCpuSeconds * 1000) / JOBS, 3),
        arrayBrokerCpuMsPerTask:
          array.brokerCpuSeconds === null ? null : round((array.brokerCpuSeconds * 1000) / JOBS, 3),
        // Wall time: the workflow's last start beyond the array's, a job (the agent's work too).
        wallOverheadMsPerJob: round(overArrayMs / JOBS, 3),
        wallOverXargsMsPerJob: xargsMs === null ? null : round((flow.lastStartMs - xargsMs) / JOBS, 3),
        submitMs: round(flow.submitMs, 1),
        submitMsPerJob: round(flow.submitMs / JOBS, 4),
        submitToSinkStartMs: round(flow.lastStartMs, 1),
        arraySubmitToLastStartMs: round(array.lastStartMs, 1),
        xargsMs: xargsMs === null ? null : round(xargsMs, 1),
        // The fan-out: from the root's end to the first and the last middle job's start.
        rootEndToFirstMiddleStartMs: round(Math.min(...middleStarts) - rootEnd, 1),
        rootEndToLastMiddleStartMs: round(Math.max(...middleStarts) - rootEnd, 1),
        // The fan-in: from the last middle job's end to the sink's start.
        lastMiddleEndToSinkStartMs: round(Date.parse(sink.startedAt) - lastMiddleEnd, 1),
      },
    };
  },
};

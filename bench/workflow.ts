// A fan-out/fan-in workflow of 10,000 `true` jobs (one root, 9,998 middle jobs waiting for it, one
// sink waiting for all of them) on `steward up --agents 1 --slots 4`, against the same slots' own
// limit: an array of 10,000 `true` tasks on a fresh `up` of the same shape, whose tasks need no
// decision between them (no dependency, one job). What the workflow takes beyond the array, per
// job, is the scheduling overhead of its jobs: their atomic creation, a job's dependencies looked at
// when another ends, and each job placed as a job of its own. Also against xargs (`raw`), the slots
// with no Steward at all.

import type { AccountingRow } from "../src/broker/api/schemas.ts";
import { type Benchmark, figure, round, since } from "./benchmark.ts";
import { type Steward, startSteward } from "./steward-process.ts";
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
  starts: number[];
  rows: AccountingRow[];
}

/**
 * Waits until the job `last` has ended (the sink, which waits for every other job, or the array);
 * answers the ended attempts (from accounting: the fresh server holds this run's only) and their
 * start times, sorted.
 */
async function waitAll(
  steward: Steward,
  last: string,
  start: number,
  label: string,
  progress: (message: string) => void,
): Promise<{ rows: AccountingRow[]; starts: number[] }> {
  const { api } = steward;
  let lastReport = performance.now();
  for (;;) {
    const job = await api.job(last);
    if (ENDED.has(job.state)) break;
    if (since(start) > TIMEOUT_MS) throw new Error(`${label}: job ${last} still ${job.state}`);
    if (performance.now() - lastReport > 2000) {
      lastReport = performance.now();
      progress(`${label}: ${round(since(start) / 1000)} s, waiting for job ${last} (${job.state})`);
    }
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
  const rows = (await api.request<AccountingRow[]>("GET", "/api/v1/accounting?limit=100000")).body;
  const bad = rows.filter((row) => row.outcome !== "succeeded");
  if (bad.length > 0) throw new Error(`${label}: ${bad.length} attempts did not succeed`);
  const starts = rows.map((row) => Date.parse(row.startedAt)).sort((a, b) => a - b);
  return { rows, starts };
}

async function runWorkflow(
  options: { cpuProf: boolean; keep: boolean },
  progress: (m: string) => void,
): Promise<Run & { jobs: Record<string, string>; cpuSeconds: number | null }> {
  const steward = await startSteward({
    label: "workflow",
    agents: 1,
    slots: SLOTS,
    cpuProf: options.cpuProf,
    keep: options.keep,
  });
  try {
    const file = fanOutFanIn(JOBS);
    const cpuBefore = steward.cpuSeconds();
    const startWall = Date.now();
    const start = performance.now();
    const answer = await steward.api.request<{ workflow: string; jobs: Record<string, string> }>(
      "POST",
      "/api/v1/workflows",
      file,
    );
    const submitMs = since(start);
    if (answer.status !== 201) throw new Error(`workflow submit answered ${answer.status}`);
    progress(`workflow: ${JOBS} jobs made in ${round(submitMs)} ms (${answer.body.workflow})`);
    const { rows, starts } = await waitAll(steward, answer.body.jobs.sink, start, "workflow", progress);
    const cpuAfter = steward.cpuSeconds();
    if (rows.length !== JOBS) throw new Error(`workflow: ${rows.length} attempts, not ${JOBS}`);
    return {
      jobs: answer.body.jobs,
      rows,
      starts,
      submitMs,
      lastStartMs: starts.at(-1)! - startWall,
      cpuSeconds:
        cpuBefore && cpuAfter ? cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system : null,
    };
  } finally {
    await steward.stop();
  }
}

async function runArray(
  options: { cpuProf: boolean; keep: boolean },
  progress: (m: string) => void,
): Promise<Run & { cpuSeconds: number | null }> {
  const steward = await startSteward({
    label: "workflow-array",
    agents: 1,
    slots: SLOTS,
    cpuProf: options.cpuProf,
    keep: options.keep,
  });
  try {
    const cpuBefore = steward.cpuSeconds();
    const startWall = Date.now();
    const start = performance.now();
    const id = await steward.api.submit({
      name: "bench-fan-array",
      command: ["true"],
      array: { count: JOBS },
    });
    const submitMs = since(start);
    const { rows, starts } = await waitAll(steward, id, start, "workflow-array", progress);
    const cpuAfter = steward.cpuSeconds();
    if (rows.length !== JOBS) throw new Error(`array: ${rows.length} attempts, not ${JOBS}`);
    return {
      rows,
      starts,
      submitMs,
      lastStartMs: starts.at(-1)! - startWall,
      cpuSeconds:
        cpuBefore && cpuAfter ? cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system : null,
    };
  } finally {
    await steward.stop();
  }
}

export const workflowBenchmark: Benchmark = {
  name: "workflow",
  description: `a fan-out/fan-in workflow of ${JOBS} \`true\` jobs on 1 agent of ${SLOTS} slots: submit to the sink's start, against an array of ${JOBS} tasks`,
  needs: ["xargs"],
  async run({ options, results, progress }) {
    const flow = await runWorkflow(options, progress);
    const array = await runArray(options, progress);
    const byJob = new Map(flow.rows.map((row) => [row.job, row]));
    const root = byJob.get(flow.jobs.root)!;
    const sink = byJob.get(flow.jobs.sink)!;
    const middle = flow.rows.filter((row) => row.job !== flow.jobs.root && row.job !== flow.jobs.sink);
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
    return {
      workflow: {
        jobs: JOBS,
        slots: SLOTS,
        // The headline: what the workflow took beyond the same slots running an array of as many tasks.
        overheadMsPerJob: round(overArrayMs / JOBS, 3),
        targetMsPerJob: 1,
        overXargsMsPerJob: xargsMs === null ? null : round((flow.lastStartMs - xargsMs) / JOBS, 3),
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
        stewardCpuSeconds: flow.cpuSeconds === null ? null : round(flow.cpuSeconds, 2),
        arrayStewardCpuSeconds: array.cpuSeconds === null ? null : round(array.cpuSeconds, 2),
        stewardCpuMsPerJobOverArray:
          flow.cpuSeconds === null || array.cpuSeconds === null
            ? null
            : round(((flow.cpuSeconds - array.cpuSeconds) * 1000) / JOBS, 3),
      },
    };
  },
};

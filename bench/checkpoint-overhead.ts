// Checkpoint overhead: the same job, a fixed amount of CPU work (about 40 s here) that rewrites
// 100 MB of state every 10 s of its run, once with the state in $STEWARD_CHECKPOINT_DIR (the agent
// hashes and uploads it every 10 s) and once with it in a folder nothing uploads. The figure is the
// job's own run time with checkpoints against without, alternating, on one agent of one slot.

import { execFileSync } from "node:child_process";
import { openAsBlob } from "node:fs";
import { join } from "node:path";
import { type Benchmark, pollUntil, REPOSITORY, round, since } from "./benchmark.ts";
import { startSteward } from "./steward-process.ts";

const SCRIPT = join(REPOSITORY, "bench", "jobs", "cpu-state.mjs");
const WORK_SECONDS = 40;
const WRITE_EVERY_SECONDS = 10;
const INTERVAL_SECONDS = 10;
const GRACE_SECONDS = 30;
const RUNS_EACH = 2;
const POLL_MS = 250;
const JOB_TIMEOUT_MS = 4 * WORK_SECONDS * 1000;

type Variant = "with" | "without";

interface JobReport {
  elapsedMs: number;
  units: number;
  writes: number;
  writeMs: number;
}

/** The job's own JSON line, the last line of its stdout. */
function parseReport(stdout: string): JobReport {
  const line = stdout.trim().split("\n").at(-1) ?? "";
  try {
    const report = JSON.parse(line) as JobReport;
    if (typeof report.elapsedMs === "number") return report;
  } catch {}
  throw new Error(
    `checkpoint-overhead: no run time in the job's stdout: ${JSON.stringify(stdout.slice(-500))}`,
  );
}

const mean = (values: number[]) => values.reduce((sum, v) => sum + v, 0) / values.length;

export const checkpointOverheadBenchmark: Benchmark = {
  name: "checkpoint-overhead",
  description: `${WORK_SECONDS} s of CPU work rewriting 100 MB of state every ${WRITE_EVERY_SECONDS} s, checkpointed every ${INTERVAL_SECONDS} s or not, ${RUNS_EACH} runs each`,
  async run({ options, progress }) {
    // The job runs on the `node` its PATH finds, which is ours: calibrate with that one.
    const calibration = JSON.parse(
      execFileSync("node", [SCRIPT, "--calibrate"], { encoding: "utf8", cwd: REPOSITORY }),
    ) as { unitsPerSecond: number };
    const every = Math.max(1, Math.round(calibration.unitsPerSecond * WRITE_EVERY_SECONDS));
    const units = every * Math.round(WORK_SECONDS / WRITE_EVERY_SECONDS);
    progress(
      `checkpoint-overhead: ${round(calibration.unitsPerSecond)} work units/s; ${units} units, state written every ${every}`,
    );
    const steward = await startSteward({
      label: "checkpoint-overhead",
      agents: 1,
      slots: 1,
      cpuProf: options.cpuProf,
      keep: options.keep,
    });
    try {
      const { api } = steward;
      const script = await openAsBlob(SCRIPT);
      const seconds: Record<Variant, number[]> = { with: [], without: [] };
      const writeSeconds: Record<Variant, number[]> = { with: [], without: [] };
      const stewardCpuSeconds: Record<Variant, number[]> = { with: [], without: [] };
      const generations: number[] = [];
      for (let run = 0; run < 2 * RUNS_EACH; run++) {
        const variant: Variant = run % 2 === 0 ? "without" : "with";
        const cpuBefore = steward.cpuSeconds();
        const start = performance.now();
        const id = await api.submitWithFiles(
          {
            name: `bench-ckpt-${variant}-${run}`,
            command: [
              "node",
              "work.mjs",
              String(units),
              String(every),
              variant === "with" ? "checkpoint" : "nockpt",
            ],
            inputs: ["work.mjs"],
            checkpoint: { intervalSeconds: INTERVAL_SECONDS, graceSeconds: GRACE_SECONDS },
          },
          [{ path: "work.mjs", content: script }],
        );
        const state = await pollUntil(
          `checkpoint-overhead: job ${id} ended`,
          async () => {
            const job = await api.job(id);
            return ["succeeded", "failed", "cancelled"].includes(job.state) ? job.state : undefined;
          },
          { intervalMs: POLL_MS, timeoutMs: JOB_TIMEOUT_MS },
        );
        const cpuAfter = steward.cpuSeconds();
        const stdout = await api.logs(id);
        if (state !== "succeeded") {
          const stderr = await api.logs(id, { stream: "stderr" });
          throw new Error(`checkpoint-overhead: job ${id} ended ${state}: ${stderr.slice(-500)}`);
        }
        const report = parseReport(stdout);
        const detail = await api.jobDetail(id);
        const generation = detail.tasks[0].checkpoint?.generation ?? 0;
        if (variant === "with") generations.push(generation);
        else if (generation !== 0)
          throw new Error(`checkpoint-overhead: the baseline job ${id} uploaded a checkpoint`);
        seconds[variant].push(report.elapsedMs / 1000);
        writeSeconds[variant].push(report.writeMs / 1000);
        if (cpuBefore && cpuAfter) {
          stewardCpuSeconds[variant].push(
            round(cpuAfter.user + cpuAfter.system - cpuBefore.user - cpuBefore.system, 2),
          );
        }
        progress(
          `checkpoint-overhead: run ${run + 1} ${variant} checkpoints: job ran ${round(report.elapsedMs / 1000, 2)} s (${report.writes} writes of 100 MB in ${round(report.writeMs / 1000, 2)} s), checkpoint generation ${generation}, ${round(since(start) / 1000, 1)} s submit to end`,
        );
      }
      const withSeconds = mean(seconds.with);
      const withoutSeconds = mean(seconds.without);
      return {
        checkpoint: {
          overheadPercent: round(((withSeconds - withoutSeconds) / withoutSeconds) * 100, 2),
          withCheckpointSeconds: round(withSeconds, 3),
          withoutCheckpointSeconds: round(withoutSeconds, 3),
          overhead: {
            // How far apart the baseline runs were: an overheadPercent inside this is noise.
            baselineSpreadPercent: round(
              ((Math.max(...seconds.without) - Math.min(...seconds.without)) / withoutSeconds) * 100,
              2,
            ),
            runs: {
              with: seconds.with.map((s) => round(s, 3)),
              without: seconds.without.map((s) => round(s, 3)),
            },
            // Time the job itself spent writing its 100 MB files (3 per run).
            jobWriteSeconds: {
              with: writeSeconds.with.map((s) => round(s, 3)),
              without: writeSeconds.without.map((s) => round(s, 3)),
            },
            // CPU of the `steward up` process (server and agent) from submit to the job's end.
            stewardCpuSeconds,
            checkpointGenerations: generations,
            stateMb: 100,
            workSeconds: WORK_SECONDS,
            writeEverySeconds: WRITE_EVERY_SECONDS,
            intervalSeconds: INTERVAL_SECONDS,
            workUnits: units,
          },
        },
      };
    } finally {
      await steward.stop();
    }
  },
};

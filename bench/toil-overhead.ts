// The overhead Steward adds to a Toil job: the CWL scatter of test/python/cwl/scatter.cwl (`echo`
// once per input) over INPUTS strings, run by Toil's CWL runner (`python3 -m steward.toil_cwl`, the
// same program on both sides) with `--batchSystem single_machine --maxCores 4` and with
// `--batchSystem steward` on `up --agents 1 --slots 4`, in alternating order. Skipped without Toil.

import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { toilPython } from "../test/python/toil-python.ts";
import { type Benchmark, busyFraction, machineCpu, median, REPOSITORY, round } from "./benchmark.ts";
import { type Steward, startSteward } from "./steward-process.ts";
import { runTimed } from "./timed-command.ts";

const INPUTS = Number(process.env.STEWARD_BENCH_TOIL_INPUTS ?? 20);
const ROUNDS = Number(process.env.STEWARD_BENCH_ENGINE_ROUNDS ?? 2);
/** single_machine's cores, and the agent's slots. */
const SLOTS = 4;
/** How often the Steward batch system asks for its jobs' states (its default is 2 s). */
const POLL_SECONDS = 0.5;
const TIMEOUT_MS = 30 * 60_000;
const WORKFLOW = join(REPOSITORY, "test", "python", "cwl", "scatter.cwl");

type Side = "steward" | "singleMachine";

/** The Steward jobs Toil made so far (Toil names them toil-...). */
async function toilJobCount(steward: Steward): Promise<number> {
  const answer = await steward.api.request<{ name: string }[]>("GET", "/api/v1/jobs?all=1");
  return answer.body.filter((job) => job.name.startsWith("toil-")).length;
}

/** One run of the scatter in a fresh folder (job store, work folder, outputs); its wall time. */
async function runScatter(side: Side, python: string, steward: Steward, keep: boolean): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), `steward-bench-toil-${side}-`));
  try {
    const messages = Array.from({ length: INPUTS }, (_, i) => `m${i}`);
    const inputs = join(dir, "inputs.json");
    writeFileSync(inputs, JSON.stringify({ messages }));
    const batchSystem =
      side === "steward"
        ? ["--batchSystem", "steward", "--stewardPollSeconds", String(POLL_SECONDS)]
        : ["--batchSystem", "single_machine"];
    const run = await runTimed({
      command: python,
      args: [
        "-m",
        "steward.toil_cwl",
        ...batchSystem,
        "--maxCores",
        String(SLOTS),
        "--jobStore",
        join(dir, "jobstore"),
        "--workDir",
        dir,
        "--outdir",
        join(dir, "out"),
        "--defaultMemory",
        "512Mi",
        "--defaultDisk",
        "64Mi",
        WORKFLOW,
        inputs,
      ],
      cwd: dir,
      env: {
        ...process.env,
        PYTHONPATH: join(REPOSITORY, "python"),
        PYTHONDONTWRITEBYTECODE: "1",
        STEWARD_URL: steward.url,
        STEWARD_TOKEN: steward.token,
      },
      timeoutMs: TIMEOUT_MS,
    });
    const greetings = (JSON.parse(run.stdout) as { greetings: unknown[] }).greetings;
    if (greetings.length !== INPUTS)
      throw new Error(`toil (${side}) gave ${greetings.length} greetings, not ${INPUTS}`);
    return run.seconds;
  } finally {
    if (!keep) rmSync(dir, { recursive: true, force: true });
  }
}

export const toilOverheadBenchmark: Benchmark = {
  name: "toil-overhead",
  description: `Toil CWL: scatter.cwl over ${INPUTS} inputs, --batchSystem steward (1 agent of ${SLOTS} slots) against single_machine (${SLOTS} cores)`,
  async run({ options, progress }) {
    if (!Number.isInteger(INPUTS) || INPUTS < 1)
      throw new Error(`STEWARD_BENCH_TOIL_INPUTS=${INPUTS}: expected a positive whole number`);
    if (!Number.isInteger(ROUNDS) || ROUNDS < 1)
      throw new Error(`STEWARD_BENCH_ENGINE_ROUNDS=${ROUNDS}: expected a positive whole number`);
    const found = toilPython();
    if ("missing" in found) {
      progress(`toil-overhead: skipped: ${found.missing}`);
      return { toilOverhead: { skipped: found.missing } };
    }
    const steward = await startSteward({
      label: "toil-overhead",
      agents: 1,
      slots: SLOTS,
      keep: options.keep,
    });
    try {
      const seconds: Record<Side, number[]> = { steward: [], singleMachine: [] };
      const stewardJobs: number[] = [];
      const machineBefore = machineCpu();
      for (let round_ = 0; round_ < ROUNDS; round_++) {
        const order: Side[] = round_ % 2 === 0 ? ["singleMachine", "steward"] : ["steward", "singleMachine"];
        for (const side of order) {
          const before = await toilJobCount(steward);
          const wall = await runScatter(side, found.python, steward, options.keep);
          seconds[side].push(wall);
          if (side === "steward") stewardJobs.push((await toilJobCount(steward)) - before);
          progress(`toil-overhead: round ${round_ + 1} ${side}: ${INPUTS} inputs in ${round(wall, 2)} s`);
        }
      }
      // The jobs Toil gave its batch system (the scatter's, and the workflow's own that are not
      // run on the leader): the same on both sides, counted where Steward names them.
      const jobs = median(stewardJobs);
      const stewardSeconds = median(seconds.steward);
      const singleMachineSeconds = median(seconds.singleMachine);
      const overheadMsPerJob = ((stewardSeconds - singleMachineSeconds) * 1000) / jobs;
      progress(
        `toil-overhead: steward ${round(stewardSeconds, 2)} s, single_machine ${round(singleMachineSeconds, 2)} s, ${jobs} jobs: ${round(overheadMsPerJob)} ms a job`,
      );
      return {
        toilOverhead: {
          inputs: INPUTS,
          jobs,
          slots: SLOTS,
          pollSeconds: POLL_SECONDS,
          rounds: ROUNDS,
          stewardSeconds: round(stewardSeconds, 2),
          singleMachineSeconds: round(singleMachineSeconds, 2),
          overheadMsPerJob: round(overheadMsPerJob),
          overheadMsPerInput: round(((stewardSeconds - singleMachineSeconds) * 1000) / INPUTS),
          runsSeconds: {
            steward: seconds.steward.map((s) => round(s, 2)),
            singleMachine: seconds.singleMachine.map((s) => round(s, 2)),
          },
          // The whole machine (all cores) over every run: other work shows here.
          machineBusyFraction: busyFraction(machineBefore, machineCpu()),
        },
      };
    } finally {
      await steward.stop();
    }
  },
};

// The round trip of tiny Python calls through steward.futures: `executor.map(lambda x: x + 1,
// range(1000))` on `steward up` with one agent of 4 slots, from the map to the last result read
// back (each call a task: its submit, its python3 start, the runner, the result uploaded, seen on
// the event stream and fetched); then the same calls 50 a task. Skipped without python3.

import { execFileSync, spawn } from "node:child_process";
import { join } from "node:path";
import { type Benchmark, busyFraction, machineCpu, REPOSITORY, round } from "./benchmark.ts";
import { startSteward } from "./steward-process.ts";

const CALLS = 1000;
const CHUNKSIZE = 50;
const SLOTS = 4;
const TIMEOUT_SECONDS = 1800;
const SCRIPT = join(REPOSITORY, "bench", "python", "futures_round_trip.py");

interface RoundTrip {
  pickler: string;
  calls: number;
  seconds: number;
  clientCpuSeconds: number;
  chunked: { chunksize: number; seconds: number };
}

/** Why python3 cannot run the benchmark, or null when it can. */
function noPython(): string | null {
  try {
    execFileSync("python3", ["-c", "import sys; assert sys.version_info >= (3, 9)"], { stdio: "ignore" });
    return null;
  } catch {
    return "no python3 of 3.9 or later";
  }
}

/** Runs the driver script to its end; its last line of output is the JSON figures. */
function runDriver(env: Record<string, string>): Promise<RoundTrip> {
  return new Promise((resolve, reject) => {
    const child = spawn("python3", [SCRIPT], {
      env: { ...process.env, PYTHONPATH: join(REPOSITORY, "python"), PYTHONDONTWRITEBYTECODE: "1", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.stderr.on("data", (chunk) => {
      stderr += chunk;
    });
    child.once("error", reject);
    child.once("close", (code) => {
      const last = stdout.trim().split("\n").pop() ?? "";
      if (code !== 0) reject(new Error(`futures_round_trip.py exited ${code}: ${stderr.slice(-2000)}`));
      else resolve(JSON.parse(last) as RoundTrip);
    });
  });
}

export const futuresRoundTripBenchmark: Benchmark = {
  name: "futures-round-trip",
  description: `steward.futures: map of x + 1 over ${CALLS} inputs (a task a call, then ${CHUNKSIZE} a task), 1 agent of ${SLOTS} slots`,
  async run({ options, progress }) {
    const missing = noPython();
    if (missing) {
      progress(`futures-round-trip: skipped: ${missing}`);
      return { futuresRoundTrip: { skipped: missing } };
    }
    const steward = await startSteward({
      label: "futures-round-trip",
      agents: 1,
      slots: SLOTS,
      keep: options.keep,
    });
    try {
      const machineBefore = machineCpu();
      const figures = await runDriver({
        STEWARD_URL: steward.url,
        STEWARD_TOKEN: steward.token,
        CALLS: String(CALLS),
        CHUNKSIZE: String(CHUNKSIZE),
        TIMEOUT: String(TIMEOUT_SECONDS),
      });
      const callsPerSecond = figures.calls / figures.seconds;
      progress(
        `futures-round-trip: ${figures.calls} calls in ${round(figures.seconds, 1)} s (${round(callsPerSecond, 1)} calls/s, ${figures.pickler}); ${CHUNKSIZE} a task: ${round(figures.chunked.seconds, 1)} s`,
      );
      return {
        futuresRoundTrip: {
          pickler: figures.pickler,
          calls: figures.calls,
          slots: SLOTS,
          seconds: round(figures.seconds, 2),
          callsPerSecond: round(callsPerSecond, 1),
          clientCpuMsPerCall: round((figures.clientCpuSeconds * 1000) / figures.calls, 3),
          chunked: {
            chunksize: figures.chunked.chunksize,
            seconds: round(figures.chunked.seconds, 2),
            callsPerSecond: round(figures.calls / figures.chunked.seconds, 1),
          },
          // The whole machine (all cores) over both runs: other work shows here.
          machineBusyFraction: busyFraction(machineBefore, machineCpu()),
        },
      };
    } finally {
      await steward.stop();
    }
  },
};

// A sampled allocation profile of a Steward daemon, counting the objects the collector has freed
// too (V8's sampling heap profiler with includeObjectsCollectedByMajorGC/MinorGC): where the bytes
// that keep the young generation's collector busy are allocated, which a CPU profile shows only as
// "(garbage collector)". Loaded into every Node process of a run by NODE_OPTIONS; it samples only
// the main thread of `up`, `server` and `agent`, and only when STEWARD_ALLOC_PROFILE_DIR is set:
//
//   STEWARD_ALLOC_PROFILE_DIR=/tmp/alloc NODE_OPTIONS="--import=$PWD/bench/allocation-sampler.ts" \
//     node_modules/.bin/node bench/run.ts --only million-tasks
//   node bench/allocation-summary.ts /tmp/alloc/alloc-PID.heapprofile
//
// (Not through npm, which runs on whatever Node the machine has and would load this file too.)
// The profile is written as the process exits (a daemon stopped with SIGTERM exits cleanly).

import { writeFileSync } from "node:fs";
import { Session } from "node:inspector";
import { join } from "node:path";
import { isMainThread } from "node:worker_threads";

/** One sample about every this many bytes allocated (V8's default is 32 KiB). */
const SAMPLING_INTERVAL_BYTES = 16 * 1024;
const DAEMONS = new Set(["up", "server", "agent"]);

const dir = process.env.STEWARD_ALLOC_PROFILE_DIR;
if (dir && isMainThread && process.argv.slice(2).some((arg) => DAEMONS.has(arg))) {
  const session = new Session();
  session.connect();
  session.post("HeapProfiler.startSampling", {
    samplingInterval: SAMPLING_INTERVAL_BYTES,
    includeObjectsCollectedByMajorGC: true,
    includeObjectsCollectedByMinorGC: true,
  });
  process.once("exit", () => {
    // A session of this thread answers at once, within the call.
    session.post("HeapProfiler.stopSampling", (error, answer) => {
      if (!error)
        writeFileSync(join(dir, `alloc-${process.pid}.heapprofile`), JSON.stringify(answer.profile));
    });
  });
}

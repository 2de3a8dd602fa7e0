// The event loop's delay in a Steward agent, which has no /metrics of its own (a broker's /metrics
// gives it as nodejs_eventloop_lag_p99_seconds, over the time since the last scrape). Loaded into
// the agents of a soak by NODE_OPTIONS="--import=…/bench/event-loop-probe.ts" with
// STEWARD_LAG_PROBE_DIR set: the main thread of an `agent` process writes, every
// STEWARD_LAG_PROBE_WINDOW_MS (5,000), the delay over that window (perf_hooks'
// monitorEventLoopDelay, 10 ms resolution) to DIR/lag-PID.json, then starts the next window. Any
// other process that loads it (a job run under the agent) does nothing.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import { isMainThread } from "node:worker_threads";

export interface LagWindow {
  /** When the window ended, ms since the epoch. */
  at: number;
  p99Ms: number;
  maxMs: number;
  meanMs: number;
}

const dir = process.env.STEWARD_LAG_PROBE_DIR;
if (dir && isMainThread && process.argv.slice(2).includes("agent")) {
  const histogram = monitorEventLoopDelay({ resolution: 10 });
  histogram.enable();
  const windowMs = Number(process.env.STEWARD_LAG_PROBE_WINDOW_MS ?? 5000);
  const timer = setInterval(() => {
    const window: LagWindow = {
      at: Date.now(),
      p99Ms: histogram.percentile(99) / 1e6,
      maxMs: histogram.max / 1e6,
      meanMs: histogram.mean / 1e6,
    };
    histogram.reset();
    try {
      writeFileSync(join(dir, `lag-${process.pid}.json`), JSON.stringify(window));
    } catch {}
  }, windowMs);
  timer.unref();
}

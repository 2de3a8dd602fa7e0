// A job for the checkpoint-overhead benchmark: a fixed amount of CPU work (UNITS units of integer
// arithmetic), and every EVERY units a rewrite of 100 MB of state, atomically (state.bin.tmp, then
// a rename to state.bin), into $STEWARD_CHECKPOINT_DIR ("checkpoint") or into ./nockpt/, which
// nothing uploads ("nockpt"). Prints its own run time on stdout as one JSON line.
//   node cpu-state.mjs UNITS EVERY checkpoint|nockpt
//   node cpu-state.mjs --calibrate    prints {"unitsPerSecond": N} for this machine and this node
// Plain JavaScript for any Node.js: the job runs on whatever `node` its PATH finds.

import { randomFillSync } from "node:crypto";
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const started = performance.now();
const STATE_BYTES = 100 * 2 ** 20;

/** One unit of work: a million rounds of xorshift32. */
function unit(seed) {
  let x = seed | 1;
  for (let i = 0; i < 1_000_000; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
  }
  return x;
}

if (process.argv[2] === "--calibrate") {
  let acc = 0;
  const warm = performance.now();
  while (performance.now() - warm < 300) acc ^= unit(acc);
  let units = 0;
  const from = performance.now();
  while (performance.now() - from < 1500) {
    acc ^= unit(acc + units);
    units++;
  }
  const unitsPerSecond = units / ((performance.now() - from) / 1000);
  console.log(JSON.stringify({ unitsPerSecond, acc }));
} else {
  const units = Number(process.argv[2]);
  const every = Number(process.argv[3]);
  const mode = process.argv[4];
  if (!(units > 0 && every > 0) || (mode !== "checkpoint" && mode !== "nockpt")) {
    console.error("usage: node cpu-state.mjs UNITS EVERY checkpoint|nockpt");
    process.exit(2);
  }
  const dir = mode === "checkpoint" ? process.env.STEWARD_CHECKPOINT_DIR : "nockpt";
  if (!dir) {
    console.error("STEWARD_CHECKPOINT_DIR is not set");
    process.exit(2);
  }
  mkdirSync(dir, { recursive: true });
  // Random-ish but cheap: 64 KiB of random bytes repeated; a few bytes change before each write,
  // so that every version has a new SHA-256.
  const block = randomFillSync(Buffer.alloc(64 * 1024));
  const state = Buffer.alloc(STATE_BYTES, block);
  let acc = 0;
  let writes = 0;
  let writeMs = 0;
  for (let u = 1; u <= units; u++) {
    acc ^= unit(acc + u);
    if (u % every === 0 && u < units) {
      const from = performance.now();
      writes++;
      for (let k = 0; k < 16; k++)
        state.writeInt32LE(acc ^ (writes * 7919 + k), (k * 6_553_577) % (STATE_BYTES - 4));
      writeFileSync(join(dir, "state.bin.tmp"), state);
      renameSync(join(dir, "state.bin.tmp"), join(dir, "state.bin"));
      writeMs += performance.now() - from;
    }
  }
  const elapsedMs = performance.now() - started;
  console.log(JSON.stringify({ elapsedMs, units, writes, writeMs, mode, acc }));
}

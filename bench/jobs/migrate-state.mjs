// A job for the migrate-100mb benchmark: at its start, if $STEWARD_CHECKPOINT_DIR/state.bin is
// there (a restarted attempt), says how big it is; else writes 100 MB there atomically
// (state.bin.tmp, then a rename). Then sleeps until it is stopped.
// Plain JavaScript for any Node.js: the job runs on whatever `node` its PATH finds.

import { randomFillSync } from "node:crypto";
import { existsSync, renameSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const STATE_BYTES = 100 * 2 ** 20;
const dir = process.env.STEWARD_CHECKPOINT_DIR;
if (!dir) {
  console.error("STEWARD_CHECKPOINT_DIR is not set");
  process.exit(2);
}
const attempt = process.env.STEWARD_ATTEMPT;
const path = join(dir, "state.bin");
if (existsSync(path)) {
  console.log(`attempt ${attempt}: restored state.bin ${statSync(path).size} bytes`);
} else {
  const state = Buffer.alloc(STATE_BYTES, randomFillSync(Buffer.alloc(64 * 1024)));
  writeFileSync(`${path}.tmp`, state);
  renameSync(`${path}.tmp`, path);
  console.log(`attempt ${attempt}: wrote state.bin ${STATE_BYTES} bytes`);
}
setInterval(() => {}, 3_600_000);

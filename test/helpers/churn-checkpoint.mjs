// A job for test/fault/checkpoint-race.test.ts: it replaces its 1 MB checkpoint file without pause
// (each version one byte value, written to a temporary file and renamed over). Restarted, it checks
// that the file it got back is one whole version, and exits 0 if so.
import { existsSync, readFileSync, renameSync, writeFileSync } from "node:fs";

const path = `${process.env.STEWARD_CHECKPOINT_DIR}/state.bin`;
if (existsSync(path)) {
  const data = readFileSync(path);
  const whole = data.length === 1 << 20 && data.every((byte) => byte === data[0]);
  console.log(`restored ${data.length} bytes, ${whole ? "whole" : "TORN"}`);
  process.exit(whole ? 0 : 1);
}
const until = Date.now() + 60_000;
for (let n = 0; Date.now() < until; n++) {
  writeFileSync(`${path}.tmp`, Buffer.alloc(1 << 20, n % 256));
  renameSync(`${path}.tmp`, path);
  await new Promise((resolve) => setImmediate(resolve));
}

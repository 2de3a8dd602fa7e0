// The host's speed score: a short CPU benchmark, so that rank expressions can prefer faster hosts.
// 1.0 is a reference core doing REFERENCE_OPS_PER_MS of the loop below; higher is faster.

const REFERENCE_OPS_PER_MS = 100_000;
const BENCHMARK_MS = 60;

let measured: number | null = null;

/** The host's score, measured once per process: `steward up` with N agents shares one host. */
export function hostSpeed(): number {
  measured ??= measureSpeed();
  return measured;
}

function measureSpeed(durationMs = BENCHMARK_MS): number {
  let operations = 0;
  let x = 1.000001;
  const start = performance.now();
  let elapsed = 0;
  while (elapsed < durationMs) {
    for (let i = 0; i < 10_000; i++) x = (x * 1.0000001 + 0.000001) % 1000;
    operations += 10_000;
    elapsed = performance.now() - start;
  }
  // Use x so the loop is not optimised away.
  if (x < 0) return 0;
  return Math.round((operations / elapsed / REFERENCE_OPS_PER_MS) * 100) / 100;
}

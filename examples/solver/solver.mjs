// An iterative solver in the spirit of the papers' CFD codes: Jacobi iterations for the Laplace
// equation on a square plate (hot top edge), checkpointed with the Steward SDK so that a restart,
// a migration or a preemption resumes from the last saved iteration.
const sdk = await import(process.env.STEWARD_SDK ?? "steward/sdk");

const N = Number(process.env.GRID ?? 160);
const ITERATIONS = Number(process.env.ITERATIONS ?? 4000);
const CHECKPOINT_EVERY = 250;

const state = sdk.loadCheckpoint("solver.json");
let grid;
let iteration;
if (state) {
  grid = Float64Array.from(state.grid);
  iteration = state.iteration;
  console.log(`restarted=${sdk.restarted()}: resuming at iteration ${iteration}`);
} else {
  grid = new Float64Array(N * N);
  for (let x = 0; x < N; x++) grid[x] = 100; // the hot edge
  iteration = 0;
  console.log(`starting a ${N}x${N} grid, ${ITERATIONS} iterations`);
}

const save = () => sdk.saveCheckpoint({ iteration, grid: Array.from(grid) }, "solver.json");
sdk.onStopRequested(() => {
  save();
  console.log(`stop requested: saved iteration ${iteration}`);
  process.exit(0);
});

let next = new Float64Array(grid);
let residual = 0;
while (iteration < ITERATIONS) {
  residual = 0;
  for (let y = 1; y < N - 1; y++) {
    for (let x = 1; x < N - 1; x++) {
      const i = y * N + x;
      const value = 0.25 * (grid[i - 1] + grid[i + 1] + grid[i - N] + grid[i + N]);
      residual = Math.max(residual, Math.abs(value - grid[i]));
      next[i] = value;
    }
  }
  [grid, next] = [next, grid];
  iteration++;
  if (iteration % CHECKPOINT_EVERY === 0) {
    save();
    sdk.progress(iteration / ITERATIONS);
    console.log(`iteration ${iteration} residual ${residual.toExponential(3)}`);
    // Let the SIGTERM handler run between iterations.
    await new Promise((resolve) => setImmediate(resolve));
  }
}
const centre = grid[(N >> 1) * N + (N >> 1)];
(await import("node:fs")).writeFileSync(
  "solution.txt",
  `iterations ${iteration}\nresidual ${residual}\ncentre ${centre}\n`,
);
console.log(`done: centre temperature ${centre.toFixed(4)}`);

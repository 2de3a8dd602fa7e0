// A multi-node job: N ranks pass a vector around a ring through rank 0, the coordinator
// ($STEWARD_COORDINATOR). Each iteration the vector visits ranks 1..N-1, then rank 0; every rank
// changes it in its own way, so the end result depends on every rank and every iteration. After
// each iteration the ranks save a coordinated checkpoint (rank 0 the vector, every rank the
// iteration) and declare it as generation <iteration>; a restarted gang resumes from the newest
// generation all ranks saved, and prints the same checksum as a run that was never disturbed.
//
// RING_ITERATIONS (default 20), RING_DELAY_MS (pause per iteration, default 200), RING_SIZE (8).

import { writeFileSync } from "node:fs";
import { createConnection, createServer } from "node:net";
import { createInterface } from "node:readline";

const sdk = await import(process.env.STEWARD_SDK);
const { rank, count, coordinator } = sdk.gang();
const ITERATIONS = Number(process.env.RING_ITERATIONS ?? 20);
const DELAY_MS = Number(process.env.RING_DELAY_MS ?? 200);
const SIZE = Number(process.env.RING_SIZE ?? 8);
const MODULUS = 1_000_003;

/** What rank r does to the vector in iteration i (the test computes the same). */
export function step(vector, r, i) {
  return vector.map((x, j) => (x * 31 + r * 7 + i * 13 + j) % MODULUS);
}

const saved = sdk.loadCheckpoint("state.json");
const state = saved ?? { iteration: 0, vector: Array.from({ length: SIZE }, (_, j) => j + 1) };
console.log(`rank ${rank} of ${count} starts at iteration ${state.iteration} (coordinator ${coordinator})`);

/** Sends one JSON line. */
const send = (socket, message) => socket.write(`${JSON.stringify(message)}\n`);
/** The JSON lines a socket brings, one at a time. */
function lines(socket) {
  const reader = createInterface({ input: socket })[Symbol.asyncIterator]();
  return async () => {
    const next = await reader.next();
    if (next.done) throw new Error("connection closed");
    return JSON.parse(next.value);
  };
}
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

function save(iteration, vector) {
  sdk.saveCheckpoint(vector ? { iteration, vector } : { iteration }, "state.json");
  sdk.checkpointGeneration(iteration);
}

if (rank === 0) {
  const port = Number(coordinator.slice(coordinator.lastIndexOf(":") + 1));
  const peers = new Map();
  await new Promise((resolve, reject) => {
    const server = createServer((socket) => {
      const read = lines(socket);
      read().then((hello) => {
        peers.set(hello.rank, { socket, read, iteration: hello.iteration });
        if (peers.size === count - 1) resolve();
      }, reject);
    });
    server.on("error", reject);
    server.listen(port, "0.0.0.0");
  });
  for (const [peer, { iteration }] of peers) {
    if (iteration !== state.iteration)
      throw new Error(
        `rank ${peer} resumes at ${iteration}, rank 0 at ${state.iteration}: not one generation`,
      );
  }
  let vector = state.vector;
  for (let i = state.iteration + 1; i <= ITERATIONS; i++) {
    for (let r = 1; r < count; r++) {
      const peer = peers.get(r);
      send(peer.socket, { type: "step", i, vector });
      vector = (await peer.read()).vector;
    }
    vector = step(vector, 0, i);
    // The coordinated checkpoint: every rank saves iteration i, then it counts.
    for (let r = 1; r < count; r++) send(peers.get(r).socket, { type: "save", i });
    for (let r = 1; r < count; r++) await peers.get(r).read();
    save(i, vector);
    sdk.progress(i / ITERATIONS);
    await sleep(DELAY_MS);
  }
  for (let r = 1; r < count; r++) send(peers.get(r).socket, { type: "done" });
  const checksum = vector.reduce((sum, x) => (sum + x) % MODULUS, 0);
  console.log(`checksum ${checksum}`);
  writeFileSync("checksum", `${checksum}\n`);
  process.exit(0);
} else {
  const [host, port] = [
    coordinator.slice(0, coordinator.lastIndexOf(":")),
    Number(coordinator.slice(coordinator.lastIndexOf(":") + 1)),
  ];
  let socket;
  for (let tries = 0; ; tries++) {
    try {
      socket = await new Promise((resolve, reject) => {
        const connection = createConnection({ host, port }, () => resolve(connection));
        connection.once("error", reject);
      });
      break;
    } catch (error) {
      if (tries >= 300) throw error;
      await sleep(100);
    }
  }
  const read = lines(socket);
  send(socket, { rank, iteration: state.iteration });
  for (;;) {
    const message = await read();
    if (message.type === "step") {
      send(socket, { vector: step(message.vector, rank, message.i) });
    } else if (message.type === "save") {
      save(message.i);
      send(socket, { saved: message.i });
    } else if (message.type === "done") {
      process.exit(0);
    }
  }
}

// Data where it lives: an array of short tasks that all read the same large input, on a server and
// 2 agents as separate processes, three ways: the input uploaded at submit with the hosts' content
// cache (each host fetches it from the broker once), the same with `--cache-gb 0` (the cache off:
// every task fetches its own copy from the broker, no download shared, as before the cache), and the
// input by URL from an HTTP server the benchmark runs (the broker moves none of it). Per way: the
// bytes the broker served for inputs, the bytes each host fetched, the caches' hit rate, and the
// wall time from the submit request to the job's end.
//
// The broker has no counter of the input bytes it serves; they are counted from the agents' cache
// counters in its /metrics (every input, uploaded or by URL, reaches an attempt through the cache,
// which counts what it fetched, off or not), less the bytes the benchmark's URL server sent.

import { createHash, randomBytes } from "node:crypto";
import { createReadStream, mkdtempSync, openAsBlob, rmSync, writeFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { loadavg, tmpdir } from "node:os";
import { join } from "node:path";
import { type BenchContext, type Benchmark, pollUntil, round, since } from "./benchmark.ts";
import { startCluster } from "./steward-cluster.ts";
import { processCpuSeconds } from "./steward-process.ts";

const AGENTS = 2;
const SLOTS = 4;
const MIB = 2 ** 20;
const INPUT_NAME = "data.bin";
const POLL_MS = 100;
const PROGRESS_MS = 10_000;
const ENDED = new Set(["succeeded", "failed", "cancelled"]);
/** How long the counters may take to reach /metrics after the job's end (the agents' heartbeats). */
const COUNTERS_TIMEOUT_MS = 30_000;

/** A positive number from the environment, or the default. */
function fromEnv(name: string, fallback: number, integer: boolean): number {
  const text = process.env[name];
  if (text === undefined || text === "") return fallback;
  const value = Number(text);
  if (!Number.isFinite(value) || value <= 0 || (integer && !Number.isInteger(value)))
    throw new Error(`${name}=${text}: expected a positive ${integer ? "integer" : "number"}`);
  return value;
}

interface InputFile {
  path: string;
  bytes: number;
  sha256: string;
}

/** Writes `bytes` random bytes (nothing to gain by compressing them) and hashes them on the way. */
function writeInput(folder: string, bytes: number): InputFile {
  const path = join(folder, INPUT_NAME);
  const hash = createHash("sha256");
  writeFileSync(path, "");
  for (let written = 0; written < bytes; ) {
    const chunk = randomBytes(Math.min(MIB, bytes - written));
    hash.update(chunk);
    writeFileSync(path, chunk, { flag: "a" });
    written += chunk.length;
  }
  return { path, bytes, sha256: hash.digest("hex") };
}

/** The URL inputs' server: serves the one file, counting its requests and the body bytes it sent. */
interface FileServer {
  url: string;
  counts: { requests: number; fullAnswers: number; notModified: number; bytesSent: number };
  close(): Promise<void>;
}

async function serveFile(input: InputFile): Promise<FileServer> {
  const counts = { requests: 0, fullAnswers: 0, notModified: 0, bytesSent: 0 };
  const etag = `"${input.sha256}"`;
  const server: Server = createServer((request, response) => {
    counts.requests++;
    if (request.url !== `/${INPUT_NAME}` || (request.method !== "GET" && request.method !== "HEAD")) {
      response.writeHead(404).end();
      return;
    }
    if (request.headers["if-none-match"] === etag) {
      counts.notModified++;
      response.writeHead(304, { etag }).end();
      return;
    }
    response.writeHead(200, {
      "content-length": input.bytes,
      "content-type": "application/octet-stream",
      etag,
    });
    if (request.method === "HEAD") {
      response.end();
      return;
    }
    counts.fullAnswers++;
    const stream = createReadStream(input.path);
    stream.on("data", (chunk) => {
      counts.bytesSent += chunk.length;
    });
    stream.on("error", (error) => response.destroy(error));
    response.on("close", () => stream.destroy());
    stream.pipe(response);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/${INPUT_NAME}`,
    counts,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** One host's cache counters, from the server's /metrics (labels host and pool). */
interface HostCounters {
  hits: number;
  misses: number;
  fetchedBytes: number;
  savedBytes: number;
}

const SERIES: Record<string, keyof HostCounters> = {
  steward_cache_hits_total: "hits",
  steward_cache_misses_total: "misses",
  steward_cache_fetched_bytes_total: "fetchedBytes",
  steward_cache_saved_bytes_total: "savedBytes",
};

/** The steward_cache_* counters of every host that reported its cache. */
function hostCacheCounters(metrics: string): Map<string, HostCounters> {
  const hosts = new Map<string, HostCounters>();
  for (const match of metrics.matchAll(/^(steward_cache_\w+)\{([^}]*)\} (\S+)$/gm)) {
    const field = SERIES[match[1]];
    const host = /(?:^|,)host="([^"]*)"/.exec(match[2])?.[1];
    if (!field || host === undefined) continue;
    let counters = hosts.get(host);
    if (!counters) {
      counters = { hits: 0, misses: 0, fetchedBytes: 0, savedBytes: 0 };
      hosts.set(host, counters);
    }
    counters[field] += Number(match[3]);
  }
  return hosts;
}

/** One of the three ways. */
interface Way {
  key: "uploadedCached" | "uploadPerTask" | "byUrl";
  label: string;
  what: string;
  agentArgs: string[];
  byUrl: boolean;
}

const WAYS: Way[] = [
  {
    key: "uploadedCached",
    label: "data-cache-uploaded",
    what: "uploaded at submit, default cache",
    agentArgs: [],
    byUrl: false,
  },
  {
    key: "uploadPerTask",
    label: "data-cache-per-task",
    what: "uploaded at submit, agents with --cache-gb 0 (cache off: every task fetches its own copy)",
    agentArgs: ["--cache-gb", "0"],
    byUrl: false,
  },
  {
    key: "byUrl",
    label: "data-cache-url",
    what: "by URL from a local HTTP server, default cache",
    agentArgs: [],
    byUrl: true,
  },
];

interface Sizes {
  input: InputFile;
  tasks: number;
}

/** Runs the array one way on a fresh server and agents (empty caches, counters from zero). */
async function measure(way: Way, { input, tasks }: Sizes, { options, progress }: BenchContext) {
  const loadAtStart = loadavg().map((x) => round(x, 2));
  const files = way.byUrl ? await serveFile(input) : null;
  const cluster = await startCluster({
    label: way.label,
    agents: AGENTS,
    slots: SLOTS,
    agentArgs: way.agentArgs,
    cpuProf: options.cpuProf,
    keep: options.keep,
  }).catch(async (error: unknown) => {
    await files?.close();
    throw error;
  });
  try {
    const { api } = cluster;
    const job = {
      name: `bench-${way.label}`,
      // A short task that reads its input: the job fails should the file be cut short.
      command: `test "$(wc -c < ${INPUT_NAME})" -eq ${input.bytes}`,
      array: { count: tasks },
    };
    // Beyond any run of the full size here; only a stop for a run that no longer moves.
    const timeoutMs = 600_000 + tasks * (input.bytes / MIB) * 20;
    const brokerCpuBefore = processCpuSeconds(cluster.serverPid);
    const start = performance.now();
    const id = files
      ? await api.submit({ ...job, inputs: [{ url: files.url, sha256: input.sha256, as: INPUT_NAME }] })
      : await api.submitWithFiles({ ...job, inputs: [INPUT_NAME] }, [
          { path: INPUT_NAME, content: await openAsBlob(input.path) },
        ]);
    const submitMs = since(start);
    let lastProgress = performance.now();
    const summary = await pollUntil(
      `data-cache: ${way.label}: job ${id} ended`,
      async () => {
        const job = await api.job(id);
        if (ENDED.has(job.state)) return job;
        if (performance.now() - lastProgress >= PROGRESS_MS) {
          lastProgress = performance.now();
          const c = job.counts;
          progress(
            `data-cache: ${way.label}: ${round(since(start) / 1000)} s: ${c.succeeded} succeeded, ${c.running} running, ${c.pending} pending, ${c.failed} failed`,
          );
        }
        return undefined;
      },
      { intervalMs: POLL_MS, timeoutMs },
    );
    const allEndedMs = since(start);
    const brokerCpuAfter = processCpuSeconds(cluster.serverPid);
    if (summary.state !== "succeeded") {
      const detail = await api.jobDetail(id);
      const failed = detail.tasks.flatMap((t) => t.attempts).find((a) => a.outcome !== "succeeded");
      throw new Error(
        `data-cache: ${way.label}: job ${id} ${summary.state} (${JSON.stringify(summary.counts)}); an attempt: ${failed?.outcome} ${failed?.reason ?? ""}`,
      );
    }
    const attempts = (await api.jobDetail(id)).tasks.flatMap((t) => t.attempts);
    const tasksByHost = new Map<string, number>();
    for (const attempt of attempts) tasksByHost.set(attempt.host, (tasksByHost.get(attempt.host) ?? 0) + 1);

    // Every attempt placed its input once (a hit or a miss): wait for the heartbeats that say so.
    const hosts = await pollUntil(
      `data-cache: ${way.label}: the cache counters of ${attempts.length} attempts in /metrics`,
      async () => {
        const counters = hostCacheCounters(await api.metrics());
        let placed = 0;
        for (const c of counters.values()) placed += c.hits + c.misses;
        return placed >= attempts.length ? counters : undefined;
      },
      { intervalMs: 250, timeoutMs: COUNTERS_TIMEOUT_MS },
    );
    let hits = 0;
    let misses = 0;
    let fetchedBytes = 0;
    const perHost = [...hosts.entries()]
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([name, c]) => {
        hits += c.hits;
        misses += c.misses;
        fetchedBytes += c.fetchedBytes;
        return {
          name,
          attempts: tasksByHost.get(name) ?? 0,
          fetchedBytes: c.fetchedBytes,
          fetchedInputs: round(c.fetchedBytes / input.bytes, 3),
          hits: c.hits,
          misses: c.misses,
        };
      });
    const urlBytes = files?.counts.bytesSent ?? 0;
    const brokerServedBytes = fetchedBytes - urlBytes;
    const figures = {
      what: way.what,
      agentArgs: way.agentArgs.join(" "),
      uploadedBytes: files ? 0 : input.bytes,
      brokerServedBytes,
      brokerServedInputs: round(brokerServedBytes / input.bytes, 3),
      hosts: perHost,
      hitRate: hits + misses > 0 ? round(hits / (hits + misses), 4) : null,
      hits,
      misses,
      attempts: attempts.length,
      submitSeconds: round(submitMs / 1000, 3),
      allEndedSeconds: round(allEndedMs / 1000, 3),
      brokerCpuSeconds:
        brokerCpuBefore && brokerCpuAfter
          ? round(
              brokerCpuAfter.user + brokerCpuAfter.system - brokerCpuBefore.user - brokerCpuBefore.system,
              2,
            )
          : null,
      loadAverageAtStart: loadAtStart,
      ...(files ? { urlServer: { ...files.counts } } : {}),
    };
    progress(
      `data-cache: ${way.label}: ${tasks} tasks in ${figures.allEndedSeconds} s (submit ${figures.submitSeconds} s); broker served ${figures.brokerServedInputs} inputs, hit rate ${figures.hitRate}, hosts fetched ${perHost.map((h) => h.fetchedInputs).join(" and ")} inputs`,
    );
    return figures;
  } finally {
    await cluster.stop();
    await files?.close();
  }
}

export const dataCacheBenchmark: Benchmark = {
  name: "data-cache",
  description: `an array of short tasks reading one input (STEWARD_BENCH_DATA_MB, default 500 MiB; STEWARD_BENCH_DATA_TASKS, default 1000) on ${AGENTS} agents of ${SLOTS} slots: uploaded with the hosts' cache, uploaded with --cache-gb 0 (every task its own copy), by URL`,
  async run(context) {
    const inputMb = fromEnv("STEWARD_BENCH_DATA_MB", 500, false);
    const tasks = fromEnv("STEWARD_BENCH_DATA_TASKS", 1000, true);
    const folder = mkdtempSync(join(tmpdir(), "steward-bench-data-input-"));
    try {
      const input = writeInput(folder, Math.round(inputMb * MIB));
      context.progress(`data-cache: input of ${input.bytes} bytes written, ${tasks} tasks`);
      const ways: Record<string, Awaited<ReturnType<typeof measure>>> = {};
      for (const way of WAYS) ways[way.key] = await measure(way, { input, tasks }, context);
      const perTask = ways.uploadPerTask.allEndedSeconds;
      return {
        dataCache: {
          inputBytes: input.bytes,
          tasks,
          agents: AGENTS,
          slots: SLOTS,
          ...ways,
          // How many times longer the path before the cache took than each way with it.
          wallTimeRatio: {
            uploadPerTaskOverCached: round(perTask / ways.uploadedCached.allEndedSeconds, 3),
            uploadPerTaskOverUrl: round(perTask / ways.byUrl.allEndedSeconds, 3),
          },
        },
      };
    } finally {
      rmSync(folder, { recursive: true, force: true });
    }
  },
};

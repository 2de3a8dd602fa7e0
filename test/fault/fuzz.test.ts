// Malformed requests (bad JSON, wrong types, huge or empty bodies, unknown fields, path traversal in
// inputs, outputs and fetch, bad multipart, bad agent messages): 1,000 of them, built from a seeded
// generator; then multipart bodies cut short at seeded places (with a correct Content-Length) and
// bodies that stop before their Content-Length, written on a socket. Every answer is a 4xx with a
// message, the server keeps running, no file appears outside its folders, and no job is created
// (but the one the agent routes are tried on, placed on a host joined by hand). Then, each on a
// server of its own: retries and workflow retries against QoS limits, parameters files too large
// or too long, hostile backup archives for a restore, and job and workflow ids full of shell syntax
// for the shell completion (never run; only ids of the shapes Steward makes offered).

import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, expect, it } from "vitest";
import WebSocket from "ws";
import { restoreBackup } from "../../src/broker/backup/restore.ts";
import { completionStandIn, hasIdShape } from "../helpers/completion-stand-in.ts";
import { manifestEntry, paxRecord, TAR_END, tarEntry, tarHeader, writeGzip } from "../helpers/hostile-tar.ts";
import { credentialOf, rawHello } from "../helpers/raw-agent.ts";
import { multipartBody, rawRequest } from "../helpers/raw-http.ts";
import {
  api,
  cleanup,
  cli,
  type StewardProcess,
  startServerProcess,
  tempDir,
  waitFor,
} from "../helpers/steward.ts";

const SEED = Number(process.env.STEWARD_FUZZ_SEED ?? Date.now() % 100_000);
const COUNT = 1000;
/** Multipart bodies cut short at seeded places, and bodies that stop before their Content-Length. */
const CUT_COUNT = 60;
const STALLED_COUNT = 3;
const BODY_TIMEOUT_SECONDS = 1;
const ESCAPE = `steward-fuzz-escape-${process.pid}`;

let server: (StewardProcess & { joinToken: string }) | undefined;

afterAll(async () => {
  await server?.stop();
  cleanup(server?.data ?? "");
});

/** A small seeded generator (mulberry32): the same seed makes the same requests. */
function generator(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    next,
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)],
  };
}

interface Bad {
  method: string;
  path: string;
  body?: string | FormData;
  contentType?: string;
  agent?: boolean;
}

const traversals = [
  `../${ESCAPE}`,
  `../../${ESCAPE}`,
  `/tmp/${ESCAPE}`,
  `a/../../${ESCAPE}`,
  `..\\${ESCAPE}`,
  "",
  ".",
];

function badRequests(seed: number): Bad[] {
  const random = generator(seed);
  const wrongValues = [
    null,
    3,
    -1,
    1.5,
    "x",
    "",
    true,
    [],
    {},
    [1, "a"],
    { nested: { deep: [null] } },
    "9".repeat(400),
  ];
  const fields = [
    "command",
    "inputs",
    "outputs",
    "env",
    "resources",
    "requirements",
    "rank",
    "priority",
    "timeLimitSeconds",
    "retry",
    "checkpoint",
    "array",
    "replicas",
    "dependsOn",
    "contract",
    "nodes",
    "nodesPerHost",
    "outputsFrom",
    "restartPool",
  ];
  const templates: (() => Bad)[] = [
    () => ({ method: "POST", path: "/api/v1/jobs", body: "{not json", contentType: "application/json" }),
    () => ({ method: "POST", path: "/api/v1/jobs", body: "", contentType: "application/json" }),
    () => ({
      method: "POST",
      path: "/api/v1/jobs",
      body: JSON.stringify(random.pick(wrongValues)),
      contentType: "application/json",
    }),
    () => ({
      method: "POST",
      path: "/api/v1/jobs",
      body: JSON.stringify({
        command: "true",
        [random.pick(fields)]: random.pick(wrongValues.slice(0, 9)),
        unknownField: 1,
      }),
      contentType: "application/json",
    }),
    () => ({
      method: "POST",
      path: "/api/v1/jobs",
      body: JSON.stringify({ command: "true", outputs: [random.pick(traversals)] }),
      contentType: "application/json",
    }),
    () => ({
      method: "POST",
      path: "/api/v1/jobs",
      body: JSON.stringify({
        command: "true",
        requirements: random.pick(["host.", "1 +", "host.gpus > 1", "'a' == ", "true &&"]),
      }),
      contentType: "application/json",
    }),
    () => ({
      method: "POST",
      path: "/api/v1/jobs",
      body: JSON.stringify({
        command: "x".repeat(1 + Math.floor(random.next() * 10)),
        array: { count: 2_000_000 },
      }),
      contentType: "application/json",
    }),
    () => {
      const form = new FormData();
      form.append("job", JSON.stringify({ command: "cat in", inputs: [random.pick(traversals)] }));
      form.append("file", new Blob(["data"]), random.pick(traversals) || "x");
      return { method: "POST", path: "/api/v1/jobs", body: form };
    },
    () => {
      const form = new FormData();
      form.append("file", new Blob(["data"]), "in");
      return { method: "POST", path: "/api/v1/jobs", body: form };
    },
    () => ({
      method: "POST",
      path: "/api/v1/jobs",
      body: "--x\r\nbroken multipart",
      contentType: "multipart/form-data; boundary=x",
    }),
    () => ({ method: "POST", path: "/api/v1/jobs", body: "command: true", contentType: "text/yaml" }),
    () => ({
      method: "GET",
      path: `/api/v1/jobs/${encodeURIComponent(random.pick(["nope", "0", "-1", "../1", "%00"]))}`,
    }),
    () => ({ method: "GET", path: `/api/v1/jobs?limit=${random.pick(["-5", "x", "1e9", "0"])}` }),
    () => ({
      method: "GET",
      path: `/api/v1/jobs/1/outputs/0/${random.pick(traversals).replaceAll("/", "%2F")}`,
    }),
    () => ({ method: "GET", path: `/api/v1/jobs/1/outputs/0/..%2F..%2F${ESCAPE}` }),
    () => ({ method: "GET", path: `/api/v1/jobs/1/logs?task=${random.pick(["-1", "x", "99999999999"])}` }),
    () => ({
      method: "POST",
      path: `/api/v1/jobs/${random.pick(["999999", "nope"])}/${random.pick(["cancel", "hold", "release", "migrate", "explode"])}`,
      body: random.pick(["{", "[]", '{"to": 5}']),
      contentType: "application/json",
    }),
    () => ({ method: "DELETE", path: `/api/v1/jobs/${random.pick(["999999", "nope", "%2e%2e"])}` }),
    () => ({
      method: "POST",
      path: `/api/v1/hosts/${random.pick(["nope", "..", "%00"])}/drain`,
      body: "{}",
      contentType: "application/json",
    }),
    () => ({
      method: random.pick(["PUT", "PATCH", "DELETE"]),
      path: "/api/v1/jobs",
      body: "{}",
      contentType: "application/json",
    }),
    () => ({
      method: "GET",
      path: `/api/v1/${random.pick(["../etc/passwd", "jobz", "hosts/../../x", "events?after=-3"])}`,
    }),
    () => ({
      method: "PUT",
      path: `/api/v1/agent/jobs/1/tasks/0/attempts/1/outputs/${random.pick(traversals).replaceAll("/", "%2F") || "x"}`,
      body: "data",
      contentType: "application/octet-stream",
      agent: true,
    }),
    () => ({
      method: "PUT",
      path: `/api/v1/agent/jobs/1/tasks/0/attempts/1/checkpoint/objects/${random.pick(["zz", "0".repeat(64), `..%2F${ESCAPE}`])}`,
      body: "data",
      contentType: "application/octet-stream",
      agent: true,
    }),
    () => ({
      method: "POST",
      path: "/api/v1/agent/jobs/1/tasks/0/attempts/1/checkpoint",
      body: JSON.stringify(
        random.pick([
          { files: [{ path: `../${ESCAPE}`, sha256: "a".repeat(64), bytes: -1 }] },
          { files: "x" },
          {},
        ]),
      ),
      contentType: "application/json",
      agent: true,
    }),
    () => ({
      method: "GET",
      path: `/api/v1/agent/jobs/1/inputs/${random.pick(traversals).replaceAll("/", "%2F") || "x"}`,
      agent: true,
    }),
  ];
  return Array.from({ length: COUNT }, () => random.pick(templates)());
}

it(`answers ${COUNT} malformed requests with a 4xx and a message, and keeps running`, async () => {
  server = await startServerProcess({ args: ["--body-timeout-seconds", String(BODY_TIMEOUT_SECONDS)] });
  const s = server;
  const before = new Set(readdirSync(tmpdir()));
  console.log(`fuzz seed ${SEED} (replay with STEWARD_FUZZ_SEED=${SEED})`);
  const unexpected: string[] = [];
  // Two hosts join by hand: job 1 is placed on the first (which never runs it, so its attempt 1
  // stays live), the second runs nothing of it. The agent routes are tried with the right host's
  // credential, the other host's and the join token, in turn: malformed requests get a 4xx
  // whoever sends them, and a well-formed one from the wrong host a 404.
  const right = await rawHello(s.url, { name: "fuzz-host", token: s.joinToken });
  const wrong = await rawHello(s.url, { name: "fuzz-intruder", token: s.joinToken });
  const submitted = await fetch(`${s.url}/api/v1/jobs`, {
    method: "POST",
    headers: { authorization: `Bearer ${s.token}`, "content-type": "application/json" },
    body: JSON.stringify({
      command: "true",
      inputs: [],
      outputs: ["out"],
      requirements: 'host.name == "fuzz-host"',
    }),
  });
  expect(submitted.status).toBe(201);
  const job = ((await submitted.json()) as { id: string }).id;
  expect(job).toBe("1");
  await waitFor("job 1 placed on fuzz-host", async () => {
    const found = (await (
      await fetch(`${s.url}/api/v1/jobs/1`, { headers: { authorization: `Bearer ${s.token}` } })
    ).json()) as { tasks: { attempts: { host: string }[] }[] };
    return found.tasks[0].attempts[0]?.host === "fuzz-host";
  });
  const agentTokens = [s.joinToken, credentialOf(right.answer), credentialOf(wrong.answer)];
  expect(agentTokens.every(Boolean)).toBe(true);
  let agentCalls = 0;
  for (const bad of badRequests(SEED)) {
    const headers: Record<string, string> = {
      authorization: `Bearer ${bad.agent ? agentTokens[agentCalls++ % agentTokens.length] : s.token}`,
    };
    if (bad.contentType) headers["content-type"] = bad.contentType;
    const response = await fetch(`${s.url}${bad.path}`, { method: bad.method, headers, body: bad.body });
    const text = await response.text();
    let message: unknown = null;
    try {
      message = (JSON.parse(text) as { error?: { message?: unknown } }).error?.message;
    } catch {}
    if (response.status < 400 || response.status >= 500 || typeof message !== "string" || !message) {
      unexpected.push(`${bad.method} ${bad.path} -> ${response.status} ${text.slice(0, 200)}`);
    }
  }
  expect(unexpected.slice(0, 10), `seed ${SEED}`).toStrictEqual([]);

  // Bodies written on a socket: a correct Content-Length for a multipart body that ends inside a
  // part (the job field, a file part, a part's headers, right after a boundary line): each a 4xx
  // within 2 s; and bodies that stop short of their Content-Length: a 408 after the body timeout.
  const random = generator(SEED + 1);
  const whole = multipartBody("fz", [
    { name: "job", data: JSON.stringify({ command: "cat in", inputs: ["in"] }) },
    { name: "in", filename: "in", data: "input data ".repeat(50) },
  ]);
  const boundaryLine = whole.indexOf("--fz\r\n", 1) + "--fz\r\n".length;
  const cuts = [
    boundaryLine,
    ...Array.from({ length: CUT_COUNT - 1 }, () => 1 + Math.floor(random.next() * (whole.length - 8))),
  ];
  const raw = async (body: string, contentLength?: number) =>
    rawRequest(s.url, {
      method: "POST",
      path: "/api/v1/jobs",
      headers: { authorization: `Bearer ${s.token}`, "content-type": "multipart/form-data; boundary=fz" },
      body,
      contentLength,
      timeoutMs: 5000,
    });
  for (const cut of cuts) {
    const answer = await raw(whole.slice(0, cut));
    if (answer.status === null || answer.status < 400 || answer.status >= 500 || answer.ms > 2000)
      unexpected.push(
        `multipart cut at ${cut} of ${whole.length} -> ${answer.status} in ${answer.ms} ms ${answer.body.slice(0, 200)}`,
      );
  }
  for (let i = 0; i < STALLED_COUNT; i++) {
    const cut = 1 + Math.floor(random.next() * (whole.length - 1));
    const answer = await raw(whole.slice(0, cut), whole.length);
    if (answer.status !== 408 || answer.ms > BODY_TIMEOUT_SECONDS * 1000 + 2000)
      unexpected.push(
        `body stalled at ${cut} of ${whole.length} -> ${answer.status} in ${answer.ms} ms ${answer.body.slice(0, 200)}`,
      );
  }
  expect(unexpected.slice(0, 10), `seed ${SEED}`).toStrictEqual([]);

  // Bad agent messages: the socket is closed or the message ignored; the server goes on.
  for (const data of [
    "{",
    "[]",
    JSON.stringify({ type: "hello", v: 1 }),
    JSON.stringify({ type: "report", seq: -1 }),
    "x".repeat(100_000),
  ]) {
    const ws = new WebSocket(`${s.url.replace(/^http/, "ws")}/api/v1/agent/connect`);
    await new Promise<void>((resolve) => {
      ws.once("open", () => ws.send(data));
      ws.once("error", () => resolve());
      ws.once("close", () => resolve());
      setTimeout(() => {
        ws.terminate();
        resolve();
      }, 500);
    });
  }

  const health = await fetch(`${s.url}/healthz`);
  expect(health.ok).toBe(true);
  const jobs = (await (
    await fetch(`${s.url}/api/v1/jobs?all=1`, { headers: { authorization: `Bearer ${s.token}` } })
  ).json()) as { id: string }[];
  expect(jobs.map((found) => found.id)).toStrictEqual(["1"]);
  right.ws.terminate();
  wrong.ws.terminate();
  // Nothing was written outside the server's folders.
  const appeared = readdirSync(tmpdir()).filter((name) => !before.has(name) && name.includes(ESCAPE));
  expect(appeared).toStrictEqual([]);
  expect(existsSync(join(s.data, "..", ESCAPE))).toBe(false);
  expect(existsSync(join(s.data, ESCAPE))).toBe(false);
}, 120_000);

// Retries against QoS limits: a seeded run of submits, cancels, retries of whole jobs and of some
// tasks, and workflow submits, cancels and retries, by a user whose tier allows few queued tasks.
// After every step the user's queued tasks are within the limit; every refusal is a 4xx with a
// message (429 naming the limit when a retry or submit would pass it); the server never fails.
it("keeps retries and workflow retries within the QoS limits, whatever their order", async () => {
  const folder = tempDir("steward-fuzz-qos-");
  const limit = 4;
  const qos = join(folder, "qos.yaml");
  writeFileSync(qos, `tiers:\n  normal: {}\n  batch:\n    maxQueuedTasks: ${limit}\n`);
  const s = await startServerProcess({ args: ["--qos", qos] });
  try {
    const made = await cli(s, ["token", "create", "--user", "alice", "--qos", "batch", "--json"]);
    expect(made.code, made.stderr).toBe(0);
    const alice = { url: s.url, token: (JSON.parse(made.stdout) as { token: string }).token };
    const random = generator(SEED + 2);
    const jobs: string[] = [];
    const flows: string[] = [];
    const problems: string[] = [];
    const call = async (method: string, path: string, body?: unknown) => {
      const response = await fetch(`${s.url}${path}`, {
        method,
        headers: { authorization: `Bearer ${alice.token}`, "content-type": "application/json" },
        body: JSON.stringify(body ?? {}),
      });
      const text = await response.text();
      const answer = JSON.parse(text) as { id?: string; workflow?: string; error?: { message?: string } };
      if (response.status >= 500 || (response.status >= 400 && !answer.error?.message))
        problems.push(`${method} ${path} -> ${response.status} ${text.slice(0, 200)}`);
      return { status: response.status, answer };
    };
    const queued = async () => {
      const all = (await api(alice, "GET", "/api/v1/jobs?all=1")) as { counts: { pending: number } }[];
      return all.reduce((sum, job) => sum + job.counts.pending, 0);
    };
    const spec = () => ({
      command: "true",
      qos: "batch",
      array: { count: 1 + Math.floor(random.next() * 3) },
    });
    for (let step = 0; step < 150; step++) {
      const action = random.pick([
        "submit",
        "cancel",
        "retry",
        "retry-some",
        "flow",
        "flow-cancel",
        "flow-retry",
      ]);
      const job = jobs.length > 0 ? random.pick(jobs) : null;
      const flow = flows.length > 0 ? random.pick(flows) : null;
      if (action === "submit") {
        const { status, answer } = await call("POST", "/api/v1/jobs", spec());
        if (status === 201 && answer.id) jobs.push(answer.id);
      } else if (action === "cancel" && job) {
        await call("POST", `/api/v1/jobs/${job}/cancel`, random.next() < 0.5 ? { tasks: "0" } : {});
      } else if (action === "retry" && job) {
        await call("POST", `/api/v1/jobs/${job}/retry`, {});
      } else if (action === "retry-some" && job) {
        await call("POST", `/api/v1/jobs/${job}/retry`, { tasks: random.pick(["0", "1", "0-1", "0-2"]) });
      } else if (action === "flow") {
        const { status, answer } = await call("POST", "/api/v1/workflows", {
          jobs: { a: spec(), b: { ...spec(), dependsOn: ["a"] } },
        });
        if (status === 201 && answer.workflow) flows.push(answer.workflow);
      } else if (action === "flow-cancel" && flow) {
        await call("POST", `/api/v1/workflows/${flow}/cancel`, {});
      } else if (action === "flow-retry" && flow) {
        await call("POST", `/api/v1/workflows/${flow}/retry`, {});
      }
      const now = await queued();
      if (now > limit) problems.push(`step ${step} (${action}): ${now} tasks queued, the limit is ${limit}`);
      if (problems.length > 0) break;
    }
    expect(problems, `seed ${SEED}`).toStrictEqual([]);
    expect((await fetch(`${s.url}/healthz`)).ok).toBe(true);
  } finally {
    await s.stop();
    cleanup(s.data, folder);
  }
}, 120_000);

// Parameters files of seeded shapes (too many lines, a line too long, empty lines, CRLF, bad
// UTF-8, no final line break) and one larger than the size bound: every answer is 201 or a 400
// naming array.paramsFile, a job is made for the valid ones only, and the broker's memory stays
// bounded (its RSS is printed).
it("answers oversized and over-long parameters files with a 400, holding none of them", async () => {
  const s = await startServerProcess();
  try {
    const random = generator(SEED + 3);
    const pid = s.child.pid ?? 0;
    const rss = () =>
      Math.round(Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, "utf8"))?.[1]) / 1024);
    const shapes: [string, () => Buffer, boolean][] = [
      [
        "over 1,000,000 lines",
        () => Buffer.from("1\n".repeat(1_000_001 + Math.floor(random.next() * 1000))),
        false,
      ],
      [
        "a line too long",
        () => Buffer.from(`a\n${"x".repeat(32_769 + Math.floor(random.next() * 100_000))}\nb\n`),
        false,
      ],
      ["an empty line", () => Buffer.from(`a\n${"\n".repeat(1 + Math.floor(random.next() * 3))}b\n`), false],
      ["empty", () => Buffer.alloc(0), false],
      ["CRLF lines", () => Buffer.from("a\r\nb\r\nc\r\n"), true],
      ["no final line break", () => Buffer.from("a\nb"), true],
      ["bad UTF-8", () => Buffer.from([0x61, 0xff, 0xfe, 0x0a, 0x62, 0x0a]), true],
      [
        "larger than 64 MiB",
        () => Buffer.alloc(64 * 1024 * 1024 + 1 + Math.floor(random.next() * 1024), "y\n"),
        false,
      ],
    ];
    const before = rss();
    const problems: string[] = [];
    let made = 0;
    for (const [shape, bytes, valid] of shapes) {
      const form = new FormData();
      form.append(
        "job",
        JSON.stringify({ command: "true", inputs: ["p.txt"], array: { paramsFile: "p.txt" } }),
      );
      form.append("p.txt", new Blob([bytes()]), "p.txt");
      const response = await fetch(`${s.url}/api/v1/jobs`, {
        method: "POST",
        headers: { authorization: `Bearer ${s.token}` },
        body: form,
      });
      const text = await response.text();
      if (valid && response.status === 201) made += 1;
      else if (valid || response.status !== 400 || !text.includes("array.paramsFile"))
        problems.push(`${shape} -> ${response.status} ${text.slice(0, 200)}`);
    }
    expect(problems, `seed ${SEED}`).toStrictEqual([]);
    const after = rss();
    console.log(`parameters files: broker RSS ${before} MiB before, ${after} MiB after`);
    expect(after - before).toBeLessThan(200);
    const jobs = (await api(s, "GET", "/api/v1/jobs?all=1")) as unknown[];
    expect(jobs).toHaveLength(made);
  } finally {
    await s.stop();
    cleanup(s.data);
  }
}, 120_000);

// Hostile backups for `--restore`: seeded archives declaring huge PAX headers, huge or garbled
// sizes, many entries, entries of other types, names leaving the folder, a missing or oversized
// manifest, cut short anywhere. Each is refused with a message (or restored, when it is a valid
// backup) within seconds; nothing is written outside the target folders.
it("refuses hostile backup archives quickly, with a message, writing nothing outside", async () => {
  const random = generator(SEED + 4);
  const folder = tempDir("steward-fuzz-tar-");
  try {
    const pax = (records: string) => tarEntry("PaxHeader", Buffer.from(records), "x");
    const database = tarEntry("steward.db", Buffer.from("not really a database"));
    const archives: [string, () => Buffer[]][] = [
      [
        "a huge PAX header",
        () => [
          tarHeader("PaxHeader", 2 ** (20 + Math.floor(random.next() * 13)), "x"),
          Buffer.alloc(1 << 20, "a"),
          TAR_END,
        ],
      ],
      [
        "the largest ustar size in a PAX header",
        () => [manifestEntry(), tarHeader("PaxHeader", 0o77777777777, "x"), TAR_END],
      ],
      ["a garbled size", () => [manifestEntry(), tarHeader("steward.db", "zz"), TAR_END]],
      [
        "a PAX size past any file",
        () => [manifestEntry(), pax(paxRecord("size", String(2 ** 60))), tarHeader("steward.db", 0), TAR_END],
      ],
      [
        "a negative PAX size",
        () => [manifestEntry(), pax(paxRecord("size", "-5")), tarHeader("steward.db", 0), TAR_END],
      ],
      [
        "many PAX entries",
        () => [
          manifestEntry(),
          ...Array(20_000 + Math.floor(random.next() * 80_000)).fill(pax(paxRecord("path", "blobs/x"))),
          TAR_END,
        ],
      ],
      [
        "many refused entries",
        () => [
          manifestEntry(),
          database,
          ...Array(50_000).fill(tarEntry("blobs/../../escape", Buffer.alloc(0))),
        ],
      ],
      ["a link", () => [manifestEntry(), tarHeader("steward.db", 0, "2"), TAR_END]],
      [
        "a name leaving the folder",
        () => [
          manifestEntry(),
          tarEntry(random.pick(["../escape", "/tmp/escape", "blobs/../../escape"]), Buffer.from("x")),
          TAR_END,
        ],
      ],
      [
        "a PAX path leaving the folder",
        () => [
          manifestEntry(),
          pax(paxRecord("path", "blobs/../../../escape")),
          tarEntry("steward.db", Buffer.from("x")),
          TAR_END,
        ],
      ],
      ["no manifest", () => [database, TAR_END]],
      ["an oversized manifest", () => [tarHeader("steward-backup.json", 2 ** 30), TAR_END]],
      [
        "a manifest of another format",
        () => [tarEntry("steward-backup.json", Buffer.from('{"format": 99}')), TAR_END],
      ],
      [
        "cut short",
        () => [Buffer.concat([manifestEntry(), database]).subarray(0, Math.floor(random.next() * 1500))],
      ],
      ["no end blocks", () => [manifestEntry(), database]],
    ];
    const problems: string[] = [];
    for (const [index, [shape, parts]] of archives.entries()) {
      const case_ = join(folder, String(index));
      mkdirSync(case_);
      const archive = join(case_, "backup.tar.gz");
      writeGzip(archive, parts());
      const started = performance.now();
      const outcome = await restoreBackup(archive, join(case_, "data"), join(case_, "blobs")).then(
        () => "restored",
        (error: Error) => error.message,
      );
      const seconds = (performance.now() - started) / 1000;
      if (outcome === "restored" || !outcome || seconds > 5)
        problems.push(`${shape}: ${outcome} in ${seconds.toFixed(1)} s`);
      if (readdirSync(case_).some((name) => name.includes("escape")) || existsSync(join(folder, "escape")))
        problems.push(`${shape}: a file escaped`);
    }
    expect(problems, `seed ${SEED}`).toStrictEqual([]);
  } finally {
    cleanup(folder);
  }
}, 120_000);

it("completion: seeded ids from a server, shell words and all, are never run and only ids of Steward's shapes are offered", async () => {
  const random = generator(SEED + 4);
  const folder = mkdtempSync(join(tmpdir(), "steward-fuzz-completion-"));
  try {
    const mark = join(folder, "ran");
    // Pieces a hostile id is made of: shell syntax of every kind, around a command that leaves a mark.
    const pieces = [
      "$(",
      ")",
      "`",
      ";",
      "|",
      "&",
      "&&",
      "*",
      "?",
      "[a]",
      "{a,b}",
      "$((1+1))",
      "$" + "{HOME}",
      "'",
      '"',
      "\\",
      " ",
      "\n",
      "\t",
      "<",
      ">",
      "#",
      "~",
      "!",
      `touch ${mark}`,
      "1",
      "a",
      "-",
      ".",
      "_",
      "flow-",
    ];
    const ids = Array.from({ length: 300 }, () =>
      Array.from({ length: 1 + Math.floor(random.next() * 6) }, () => random.pick(pieces)).join(""),
    );
    const flows = Array.from({ length: 50 }, () =>
      random.next() < 0.5 ? `flow-${1 + Math.floor(random.next() * 99)}` : `flow-${random.pick(pieces)}`,
    );
    const bin = completionStandIn(folder, ids, flows);
    const script = join(folder, "completion.bash");
    writeFileSync(script, (await cli(null, ["completion", "bash"])).stdout);
    const offered = execFileSync(
      "bash",
      [
        "-c",
        `source "$1"; COMP_WORDS=(steward show ''); COMP_CWORD=2; _steward; printf '%s\\n' "\${COMPREPLY[@]}"`,
        "bash",
        script,
      ],
      { encoding: "utf8", env: { ...process.env, PATH: `${bin}:${process.env.PATH}` } },
    );
    expect(existsSync(mark), `seed ${SEED}: the shell ran a command of an id`).toBe(false);
    // A job's id of its characters; a workflow's of its own shape only (flow-N).
    const expected = [
      ...ids.filter((id) => hasIdShape(id)),
      ...flows.filter((id) => /^flow-[1-9][0-9]*$/.test(id)),
    ];
    expect(offered.split("\n").filter(Boolean).sort(), `seed ${SEED}`).toEqual(expected.sort());
  } finally {
    cleanup(folder);
  }
}, 60_000);

// Countable resources and grown memory with real agents and processes. An agent started with
// `--gpus 0,1 --resource license=1` (no real GPU here: the ids are counted and given all the same)
// runs two 1-GPU jobs at once with different CUDA_VISIBLE_DEVICES while a third waits, explain
// naming the GPUs; two jobs that each need the one license run one after the other. A job over its
// memory limit with `retry.memoryGrowth: 2` is retried at twice the memory until it fits (needs
// enforcement: root and cgroups; skipped saying why otherwise, and failed under CI).

import { readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { readLayout } from "../../src/agent/cgroups/enforcement.ts";
import { enforcementUnavailable, skipUnlessEnforced } from "../helpers/agent-cgroups.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  cli,
  getJob,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

const unavailable = enforcementUnavailable();
let server: (StewardProcess & { joinToken: string }) | undefined;
let agent: AgentProcess | undefined;
const shared = tempDir("steward-resources-");

beforeAll(async () => {
  server = await startServerProcess();
  agent = await startAgentProcess({
    name: "gpu-host",
    slots: 4,
    servers: [server.url],
    joinToken: server.joinToken,
    args: ["--gpus", "0,1", "--resource", "license=1"],
  });
  await waitFor("the agent connected", async () => (await api(server!, "GET", "/api/v1/hosts")).length === 1);
});

afterAll(async () => {
  await agent?.crash();
  await server?.stop();
  cleanup(shared, server?.data ?? "", agent?.work ?? "");
});

function readText(path: string): string | null {
  try {
    const text = readFileSync(path, "utf8").trim();
    return text === "" ? null : text;
  } catch {
    return null;
  }
}

it("the agent declares its GPUs and resources in its facts", async () => {
  const [host] = (await api(server!, "GET", "/api/v1/hosts")) as {
    facts: { gpus?: string[]; resources?: Record<string, number> };
  }[];
  expect(host.facts.gpus).toEqual(["0", "1"]);
  expect(host.facts.resources).toEqual({ license: 1 });
});

it("two 1-GPU jobs run at once on different GPUs; a third waits, explain naming the GPUs", async () => {
  const s = server!;
  const seen = (n: number) => join(shared, `gpus-${n}`);
  const release = join(shared, "gpus-release");
  const body = (n: number) => ({
    command: `echo "$CUDA_VISIBLE_DEVICES $STEWARD_GPUS" > ${seen(n)}; while [ ! -e ${release} ]; do sleep 0.2; done`,
    resources: { gpus: 1 },
  });
  const first = await api(s, "POST", "/api/v1/jobs", body(1));
  const second = await api(s, "POST", "/api/v1/jobs", body(2));
  const [one, two] = await waitFor("both GPU jobs running", async () => {
    const texts = [readText(seen(1)), readText(seen(2))];
    return texts.every((text) => text !== null) ? (texts as string[]) : null;
  });
  const devices = [one, two].map((text) => text.split(" "));
  // Each sees its one GPU in both variables, and not the other's.
  for (const [cuda, steward] of devices) expect(cuda).toBe(steward);
  expect(devices.map(([cuda]) => cuda).sort()).toEqual(["0", "1"]);

  const third = await api(s, "POST", "/api/v1/jobs", body(3));
  const explained = await waitFor("explain of the waiting job", async () => {
    const result = await cli(s, ["explain", third.id]);
    return /needs 1 gpu, host has 0 free/.test(result.stdout) ? result.stdout : null;
  });
  expect(explained).toMatch(/gpu-host +yes +busy: needs 1 gpu, host has 0 free/);
  expect((await getJob(s, third.id)).state).toBe("pending");
  const placed = (await getJob(s, first.id)).tasks[0].attempts[0] as unknown as {
    placement: { host: string; gpus?: string[] }[];
  };
  expect(placed.placement[0].gpus).toHaveLength(1);

  await api(s, "POST", "/api/v1/jobs", { command: `touch ${release}` });
  for (const job of [first, second, third])
    expect((await waitForJobEnd(s, job.id, 30_000)).state).toBe("succeeded");
  expect(["0", "1"]).toContain(readText(seen(3))?.split(" ")[0]);
});

it("--resource license=1 serialises two jobs that each need one", async () => {
  const s = server!;
  const mark = (n: number, what: string) => join(shared, `license-${n}.${what}`);
  const body = (n: number) => ({
    command: `date +%s%N > ${mark(n, "start")}; echo "$STEWARD_RESOURCE_LICENSE" > ${mark(n, "units")}; sleep 1.5; date +%s%N > ${mark(n, "end")}`,
    resources: { custom: { license: 1 } },
  });
  const jobs = [await api(s, "POST", "/api/v1/jobs", body(1)), await api(s, "POST", "/api/v1/jobs", body(2))];
  for (const job of jobs) expect((await waitForJobEnd(s, job.id, 30_000)).state).toBe("succeeded");
  const times = [1, 2].map((n) => ({
    start: BigInt(readText(mark(n, "start"))!),
    end: BigInt(readText(mark(n, "end"))!),
  }));
  const [earlier, later] = times.sort((a, b) => (a.start < b.start ? -1 : 1));
  expect(later.start >= earlier.end).toBe(true);
  expect(readText(mark(1, "units"))).toBe("1");
});

it("a job over its memory limit with memoryGrowth: 2 is retried at 200, then 400 MB, and succeeds", async (context) => {
  skipUnlessEnforced(context, unavailable);
  const s = server!;
  const { id } = await api(s, "POST", "/api/v1/jobs", {
    command: ["python3", "-c", "x = bytearray(300 * 2**20); print(len(x))"],
    resources: { memoryMb: 100 },
    retry: { maxAttempts: 4, backoffSeconds: 0.2, memoryGrowth: 2 },
  });
  const ended = await waitForJobEnd(s, id, 60_000);
  expect(ended.state).toBe("succeeded");
  const attempts = ended.tasks[0].attempts as unknown as {
    outcome: string;
    reason: string | null;
    memoryMb: number | null;
  }[];
  expect(attempts.map((each) => [each.outcome, each.reason, each.memoryMb])).toEqual([
    ["failed", "out of memory: limit 100 MB reached", null],
    ["failed", "out of memory: limit 200 MB reached", 200],
    ["succeeded", null, 400],
  ]);
  const { events } = ended as unknown as { events: { kind: string; message: string }[] };
  const ends = events.filter((event) => event.kind === "attempt.failed").map((event) => event.message);
  expect(ends).toEqual([
    expect.stringMatching(/retry 2 of 4 in [\d.]+ s with 200 MB$/),
    expect.stringMatching(/retry 3 of 4 in [\d.]+ s with 400 MB$/),
  ]);
});

it("with enforcement on cgroup v1, an attempt may make and open only its own GPU devices (195:N)", async (context) => {
  const found = readLayout();
  const devices = "layout" in found && found.layout.version === 1 && found.layout.dirs.devices !== undefined;
  if (unavailable || !devices) {
    const why = unavailable ?? "no cgroup v1 devices hierarchy (on v2 GPUs are not isolated: it needs BPF)";
    if (process.env.CI && unavailable)
      throw new Error(`resource limits cannot be enforced here: ${unavailable}`);
    context.skip(`device limits cannot be enforced here: ${why}`);
  }
  const s = server!;
  const result = join(shared, "devices");
  // mknod is itself a device access the devices cgroup checks ("m"): no driver is needed to see it.
  const { id } = await api(s, "POST", "/api/v1/jobs", {
    command: [
      "own=$CUDA_VISIBLE_DEVICES; other=$((1 - own))",
      `if mknod ./own c 195 "$own"; then echo own-made; else echo own-denied; fi > ${result}`,
      `if mknod ./other c 195 "$other" 2>/dev/null; then echo other-made; else echo other-denied; fi >> ${result}`,
    ].join("; "),
    resources: { gpus: 1 },
  });
  expect((await waitForJobEnd(s, id, 30_000)).state).toBe("succeeded");
  expect(readText(result)?.split("\n")).toEqual(["own-made", "other-denied"]);
});

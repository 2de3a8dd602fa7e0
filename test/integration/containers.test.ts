// Containers with the real runtime (docs/containers.md): a job with `container` runs inside a
// busybox image made here (an oci-archive file and an OCI layout folder in a folder the host
// shares, or an archive uploaded as one of its inputs), sees the image's files and not the host's,
// its STEWARD_* variables, writes an output that comes back and a checkpoint file; is killed by
// its memory limit with the out-of-memory reason as outside; leaves nothing running after a
// cancel, which takes less than its grace period; an array's tasks unpack the image once. A host
// whose agent has no runtime (--container-runtime /nonexistent) leaves such a job waiting, and
// explain says why. On an agent with --run-as, the container's process runs as that account.
// Needs root, runc, busybox-static and cgroups: skipped without them, saying why, and failing
// under CI.

import { existsSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { findContainerRuntime } from "../../src/agent/containers/runtime.ts";
import { enforcementUnavailable, skipUnlessEnforced } from "../helpers/agent-cgroups.ts";
import { describeRunAs, makeAccount, removeAccount } from "../helpers/local-accounts.ts";
import {
  buildTestImage,
  IMAGE_OS_RELEASE,
  type TestImage,
  testImageUnavailable,
} from "../helpers/oci-image.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  getJob,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";
import { submitUploading } from "../helpers/submit-uploading.ts";

function unavailableHere(): string | null {
  const runtime = findContainerRuntime(undefined);
  if ("unavailable" in runtime) return runtime.unavailable;
  return testImageUnavailable() ?? enforcementUnavailable();
}

const unavailable = unavailableHere();
const shared = tempDir("steward-containers-");
let image: TestImage;
let server: (StewardProcess & { joinToken: string }) | undefined;
let agent: AgentProcess | undefined;
let bare: (StewardProcess & { joinToken: string }) | undefined;
let noRuntime: AgentProcess | undefined;

beforeAll(async () => {
  if (unavailable) return;
  image = buildTestImage(shared);
  server = await startServerProcess();
  agent = await startAgentProcess({
    name: "boxer",
    slots: 4,
    servers: [server.url],
    joinToken: server.joinToken,
    args: ["--shared", shared],
  });
  bare = await startServerProcess();
  noRuntime = await startAgentProcess({
    name: "plain",
    servers: [bare.url],
    joinToken: bare.joinToken,
    args: ["--shared", shared, "--container-runtime", "/nonexistent"],
  });
  await waitFor("the agents connected", async () => {
    const hosts = [
      ...(await api(server!, "GET", "/api/v1/hosts")),
      ...(await api(bare!, "GET", "/api/v1/hosts")),
    ];
    return hosts.length === 2;
  });
});

afterAll(async () => {
  await agent?.stop();
  await noRuntime?.stop();
  await server?.stop();
  await bare?.stop();
  cleanup(shared, server?.data ?? "", bare?.data ?? "", agent?.work ?? "", noRuntime?.work ?? "");
});

async function logOf(s: StewardProcess, id: string, stream = "stdout"): Promise<string> {
  const response = await fetch(`${s.url}/api/v1/jobs/${id}/logs?task=0&attempt=1&stream=${stream}`, {
    headers: { authorization: `Bearer ${s.token}` },
  });
  return response.text();
}

async function outputOf(s: StewardProcess, id: string, path: string): Promise<string> {
  const response = await fetch(`${s.url}/api/v1/jobs/${id}/outputs/0/${path}`, {
    headers: { authorization: `Bearer ${s.token}` },
  });
  return response.text();
}

it("says which runtime it found, and the host fact", async (context) => {
  skipUnlessEnforced(context, unavailable, "containers cannot run here");
  expect(agent!.output()).toMatch(/containers: runc \S+ \(\/\S+\)/);
  const [host] = (await api(server!, "GET", "/api/v1/hosts")) as {
    facts: { containers?: { runtime: string } };
  }[];
  expect(host.facts.containers?.runtime).toBe("runc");
});

it.for([
  ["an oci-archive file", () => `oci-archive:${image.archive}`],
  ["an OCI layout folder and its tag", () => `oci:${image.layout}:${image.tag}`],
] as const)(
  "a job in %s sees the image, its variables and folders; its output comes back",
  async ([, name], context) => {
    skipUnlessEnforced(context, unavailable, "containers cannot run here");
    const s = server!;
    const { id } = await api(s, "POST", "/api/v1/jobs", {
      command: [
        "cat /etc/os-release",
        "test -e /etc/debian_version && echo host-file-seen || echo no-host-file",
        'echo "image=$IMAGE_SAYS job=$STEWARD_JOB_ID task=$STEWARD_TASK_INDEX pid=$$" > result',
        'echo saved > "$STEWARD_CHECKPOINT_DIR/state" && echo checkpoint-written',
        "pwd",
      ].join("; "),
      outputs: ["result"],
      container: { image: name() },
    });
    const ended = await waitForJobEnd(s, id, 60_000);
    const log = await logOf(s, id);
    expect(ended.state, log).toBe("succeeded");
    expect(log).toContain(IMAGE_OS_RELEASE.split("\n")[0]);
    expect(log).toContain("no-host-file");
    expect(log).toContain("checkpoint-written");
    expect(log).toMatch(/\/attempts\/[^/]+\/run\n/);
    // Its own pid namespace: the job's shell has a small pid there, under the signal forwarder (1).
    expect(await outputOf(s, id, "result")).toMatch(
      new RegExp(`^image=hello job=${id} task=0 pid=([2-9]|[1-9][0-9])\n$`),
    );
  },
);

it("a job whose image is one of its inputs (uploaded at submit) runs in it", async (context) => {
  skipUnlessEnforced(context, unavailable, "containers cannot run here");
  const s = server!;
  const id = await submitUploading(
    s,
    { command: "cat /etc/os-release", container: { image: "oci-archive:image.tar" } },
    { "image.tar": readFileSync(image.archive) },
  );
  const ended = await waitForJobEnd(s, id, 60_000);
  expect(ended.state).toBe("succeeded");
  expect(await logOf(s, id)).toBe(IMAGE_OS_RELEASE);
});

it("a job over its memory limit in a container ends failed, out of memory", async (context) => {
  skipUnlessEnforced(context, unavailable, "containers cannot run here");
  const s = server!;
  const { id } = await api(s, "POST", "/api/v1/jobs", {
    command: "a=aaaaaaaaaaaaaaaa; while true; do a=$a$a; done",
    resources: { memoryMb: 64 },
    container: { image: `oci-archive:${image.archive}` },
  });
  const ended = await waitForJobEnd(s, id, 60_000);
  expect(ended.state).toBe("failed");
  expect(ended.tasks[0].attempts[0].reason).toBe("out of memory: limit 64 MB reached");
});

it("a cancelled job's container leaves nothing running, and an array unpacks its image once", async (context) => {
  skipUnlessEnforced(context, unavailable, "containers cannot run here");
  const s = server!;
  const { id } = await api(s, "POST", "/api/v1/jobs", {
    command: "sleep 3017",
    container: { image: `oci-archive:${image.archive}` },
  });
  await waitFor("running", async () => (await getJob(s, id)).state === "running");
  await waitFor("the container's sleep", async () => sleepers("3017").length > 0, 30_000);
  const cancelledAt = Date.now();
  await api(s, "POST", `/api/v1/jobs/${id}/cancel`);
  expect((await waitForJobEnd(s, id, 60_000)).state).toBe("cancelled");
  // The stop's SIGTERM reached the job (process 1's shell passes it on): not the 30 s grace period.
  expect(Date.now() - cancelledAt).toBeLessThan(15_000);
  await waitFor("the container's processes gone", async () => sleepers("3017").length === 0, 10_000);
  const array = await api(s, "POST", "/api/v1/jobs", {
    command: "cat /etc/os-release",
    array: 4,
    container: { image: `oci-archive:${image.archive}` },
  });
  expect((await waitForJobEnd(s, array.id, 60_000)).state).toBe("succeeded");
  // One image, unpacked once (its manifest's digest names its folder), and no container left.
  expect(readdirSync(join(agent!.work, "images"))).toEqual([image.digest.slice("sha256:".length)]);
  const containers = join(agent!.work, "containers");
  await waitFor(
    "no container left",
    async () => !existsSync(containers) || readdirSync(containers).length === 0,
  );
});

it("a host without a runtime leaves the job waiting, and explain says why", async (context) => {
  skipUnlessEnforced(context, unavailable, "containers cannot run here");
  const s = bare!;
  const { id } = await api(s, "POST", "/api/v1/jobs", {
    command: "true",
    container: { image: `oci-archive:${image.archive}` },
  });
  await new Promise((resolve) => setTimeout(resolve, 1500));
  expect((await getJob(s, id)).state).toBe("pending");
  const explained = (await api(s, "GET", `/api/v1/jobs/${id}/explain`)) as {
    hosts: { host: string; reason: string }[];
  };
  expect(explained.hosts[0].reason).toMatch(/host has no container runtime: \/nonexistent does not run/);
  await api(s, "POST", `/api/v1/jobs/${id}/cancel`);
});

/** The pids of `sleep SECONDS` processes on this machine. */
function sleepers(seconds: string): number[] {
  const found: number[] = [];
  for (const name of readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/cmdline`, "utf8") === `sleep\0${seconds}\0`) found.push(Number(name));
    } catch {}
  }
  return found;
}

describeRunAs("the run-as container test", "on an agent that runs jobs as another account (--run-as)", () => {
  const ACCOUNT = "stwboxuser";
  let runAsServer: (StewardProcess & { joinToken: string }) | undefined;
  let runAsAgent: AgentProcess | undefined;
  let uid = -1;

  beforeAll(async () => {
    if (unavailable) return;
    uid = makeAccount(ACCOUNT);
    runAsServer = await startServerProcess();
    runAsAgent = await startAgentProcess({
      name: "boxed-as",
      servers: [runAsServer.url],
      joinToken: runAsServer.joinToken,
      args: ["--shared", shared, "--run-as", ACCOUNT],
    });
    await waitFor(
      "the agent connected",
      async () => (await api(runAsServer!, "GET", "/api/v1/hosts")).length === 1,
    );
  }, 60_000);

  afterAll(async () => {
    await runAsAgent?.stop();
    await runAsServer?.stop();
    cleanup(runAsServer?.data ?? "", runAsAgent?.work ?? "");
    if (uid >= 0) removeAccount(ACCOUNT);
  });

  it("runs the container's process as that account, its files that account's", async (context) => {
    skipUnlessEnforced(context, unavailable, "containers cannot run here");
    const s = runAsServer!;
    const { id } = await api(s, "POST", "/api/v1/jobs", {
      command: 'id -u; id -g; echo made > made; ls -ln made; echo "home=$HOME"',
      outputs: ["made"],
      container: { image: `oci-archive:${image.archive}` },
    });
    const ended = await waitForJobEnd(s, id, 60_000);
    const log = await logOf(s, id);
    expect(ended.state, `${ended.tasks[0].attempts[0].reason}: ${await logOf(s, id, "stderr")}`).toBe(
      "succeeded",
    );
    const [ownUid, , listing] = log.split("\n");
    expect(ownUid).toBe(String(uid));
    // The file the job made in its working folder is the account's (ls -n: numeric owner).
    expect(listing.split(/\s+/)[2]).toBe(String(uid));
    expect(log).toContain("home=/nonexistent");
    expect(await outputOf(s, id, "made")).toBe("made\n");
  });
});

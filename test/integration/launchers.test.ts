// The three launchers (src/agent/launcher/launcher.ts) start jobs alike: launcher.c, compiled and chosen where
// a C compiler runs, launcher.pl (STEWARD_LAUNCHER=perl, chosen where perl runs and no compiler),
// and the shell launcher with its supervisors, the fallback (STEWARD_LAUNCHER=sh). Each: a job
// leads a session and process group of its own with SIGPIPE and SIGHUP at their defaults, gets its
// command's words and its variables byte for byte, ends with its own exit code or 128+signal (127
// for a command not found), has its CPU time counted without a cgroup, and outlives a kill -9 of
// its agent with its exit code. Real processes: `steward up`, and a server with an agent process.

import { spawn } from "node:child_process";
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readProcStat } from "../../src/agent/attempt/job-process.ts";
import { compiledLauncher, encodeLaunch } from "../../src/agent/launcher/launcher.ts";
import {
  api,
  cleanup,
  getJob,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  startUp,
  tempDir,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

async function logsOf(steward: StewardProcess, id: string): Promise<string> {
  const response = await fetch(`${steward.url}/api/v1/jobs/${id}/logs?task=0`, {
    headers: { authorization: `Bearer ${steward.token}` },
  });
  return response.text();
}

describe.each(["c", "perl", "sh"])("the %s launcher", (launcher) => {
  let steward: StewardProcess;

  beforeAll(async () => {
    steward = await startUp({
      agents: 1,
      slots: 2,
      args: ["--no-enforce"],
      env: {
        STEWARD_LAUNCHER: launcher,
        AGENT_MARK: "from the agent",
        // Steward's own settings in the shell that started `up`: none reaches a job.
        STEWARD_LOG_LEVEL: "info",
        STEWARD_JOIN_TOKEN: "not-the-job's",
        STEWARD_LAUNCHER_CACHE: join(tempDir(), "launcher-cache"),
      },
    });
  }, 30_000);

  afterAll(async () => {
    await steward?.stop();
  });

  it("is the job's parent", async () => {
    const { id } = await api(steward, "POST", "/api/v1/jobs", { command: "cat /proc/$PPID/comm" });
    expect((await waitForJobEnd(steward, id, 30_000)).state).toBe("succeeded");
    // The compiled launcher is the program `launcher` (launcher.ts keeps it under that name).
    expect((await logsOf(steward, id)).trim()).toBe(launcher === "c" ? "launcher" : launcher);
  });

  it("runs a job in a session and process group of its own, with SIGPIPE and SIGHUP at their defaults", async () => {
    const command = "grep SigIgn /proc/self/status; cut -d' ' -f5,6 /proc/$$/stat; echo $$";
    const { id } = await api(steward, "POST", "/api/v1/jobs", { command });
    expect((await waitForJobEnd(steward, id, 30_000)).state).toBe("succeeded");
    const [ignoredLine, groupLine, pidLine] = (await logsOf(steward, id)).trim().split("\n");
    const ignored = BigInt(`0x${ignoredLine.split(/\s+/)[1]}`);
    expect(ignored & (1n << 12n)).toBe(0n); // SIGPIPE (13)
    expect(ignored & 1n).toBe(0n); // SIGHUP (1)
    const [pgid, sid] = groupLine.trim().split(/\s+/);
    expect(pgid).toBe(pidLine.trim());
    expect(sid).toBe(pidLine.trim());
  });

  it("records the job's start time under its pid, as /proc has it (what tells the job from a later process)", async () => {
    const { id } = await api(steward, "POST", "/api/v1/jobs", { command: ["sleep", "2"] });
    const pidFile = join(steward.data, "agents", "local-1", "attempts", `${id}.0.1`, "pid");
    // The compiled launcher writes both lines; with perl and sh the agent adds the time once told.
    const [pid, ticks] = await waitFor("the pid and its start time", () => {
      const lines = readFileSync(pidFile, "utf8").split("\n").filter(Boolean);
      return lines.length === 2 ? lines : null;
    });
    expect(ticks).toBe(readProcStat(Number(pid))?.startTicks);
    expect((await waitForJobEnd(steward, id, 30_000)).state).toBe("succeeded");
  });

  it("gives the job the agent's environment, its own variables over it, and PWD its working folder", async () => {
    // No shell: printenv shows the environment exactly as the job got it (a shell would mend PWD).
    const { id } = await api(steward, "POST", "/api/v1/jobs", {
      command: ["printenv", "AGENT_MARK", "OWN", "STEWARD_TASK_INDEX", "HOME", "PWD"],
      env: { OWN: "the job's" },
    });
    expect((await waitForJobEnd(steward, id, 30_000)).state).toBe("succeeded");
    const [mark, own, index, home, pwd] = (await logsOf(steward, id)).trimEnd().split("\n");
    expect([mark, own, index]).toEqual(["from the agent", "the job's", "0"]);
    expect(home).toBe(process.env.HOME);
    expect(pwd).toMatch(/\/attempts\/\d+\.0\.1\/run$/);
  });

  it("gives the job none of Steward's own settings from the agent's environment, only the STEWARD_* set for it", async () => {
    const { id } = await api(steward, "POST", "/api/v1/jobs", {
      command: ["/bin/sh", "-c", "env | grep -o '^STEWARD_[A-Z_]*' | sort"],
      env: { STEWARD_MINE: "the job's own" },
    });
    expect((await waitForJobEnd(steward, id, 30_000)).state).toBe("succeeded");
    const names = (await logsOf(steward, id)).trim().split("\n");
    expect(names).toContain("STEWARD_MINE");
    expect(names).toContain("STEWARD_TASK_INDEX");
    for (const setting of [
      "STEWARD_LOG_LEVEL",
      "STEWARD_JOIN_TOKEN",
      "STEWARD_LAUNCHER_CACHE",
      "STEWARD_LAUNCHER",
      "STEWARD_COMPILE_CACHE",
      "STEWARD_URL",
      "STEWARD_TOKEN",
    ])
      expect(names).not.toContain(setting);
  });

  it("gives the job its words and variables byte for byte", async () => {
    const odd = `it's "quoted" $HOME \\ and\na newline`;
    const { id } = await api(steward, "POST", "/api/v1/jobs", {
      command: ["/bin/sh", "-c", 'printf "[%s]\\n" "$1" "$ODD"; pwd', "job", odd],
      env: { ODD: odd },
    });
    expect((await waitForJobEnd(steward, id, 30_000)).state).toBe("succeeded");
    const out = await logsOf(steward, id);
    expect(out.startsWith(`[${odd}]\n[${odd}]\n`)).toBe(true);
    expect(out.trim().endsWith("/run")).toBe(true);
  });

  it("ends with the job's own exit code, 128+N for signal N, 127 for a command not found", async () => {
    const cases: [unknown, string][] = [
      ["exit 3", "exit code 3"],
      ["exit 254", "exit code 254"],
      ["kill -TERM $$", "killed by signal 15"],
      [["no-such-command-here"], "exit code 127"],
    ];
    for (const [command, reason] of cases) {
      const { id } = await api(steward, "POST", "/api/v1/jobs", { command });
      const job = await waitForJobEnd(steward, id, 30_000);
      expect(job.state, JSON.stringify(command)).toBe("failed");
      expect(job.tasks[0].attempts[0].reason, JSON.stringify(command)).toBe(reason);
    }
  });

  it("counts the CPU time of the job and of what it waited for, without a cgroup", async () => {
    const { id } = await api(steward, "POST", "/api/v1/jobs", {
      command: "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done & wait",
    });
    const job = await waitForJobEnd(steward, id, 60_000);
    expect(job.state).toBe("succeeded");
    const usage = job.tasks[0].attempts[0].usage!;
    expect(usage.userSeconds! + usage.systemSeconds!).toBeGreaterThan(0.05);
    expect(usage.peakMemoryMb).toBeNull();
  });
});

describe.each(["c", "perl", "sh"])("with the %s launcher, kill -9 of the agent alone", (launcher) => {
  it("leaves its jobs running: restarted, the agent reports each one's exit code", async () => {
    const server = await startServerProcess({ heartbeatSeconds: 1, hostTimeoutSeconds: 6 });
    const options = {
      name: `restart-${launcher}`,
      slots: 2,
      servers: [server.url],
      joinToken: server.joinToken,
      prefix: ["env", `STEWARD_LAUNCHER=${launcher}`],
    };
    const agent = await startAgentProcess(options);
    let again: Awaited<ReturnType<typeof startAgentProcess>> | null = null;
    try {
      const { id } = await api(server, "POST", "/api/v1/jobs", {
        // Task 0 ends while the agent is away, task 1 after its return.
        command: 'if [ "$STEWARD_TASK_INDEX" = 0 ]; then sleep 1; exit 5; else sleep 4; exit 6; fi',
        array: { count: 2 },
      });
      await waitFor("both running", async () => {
        const job = await getJob(server, id);
        return job.tasks.every((task) => task.attempts[0]?.state === "running") ? job : null;
      });
      await agent.kill9();
      await new Promise((resolve) => setTimeout(resolve, 1500));
      again = await startAgentProcess({ ...options, work: agent.work });
      const job = await waitForJobEnd(server, id, 60_000);
      expect(job.tasks.map((task) => task.attempts.length)).toEqual([1, 1]);
      expect(job.tasks.map((task) => task.attempts[0].reason)).toEqual(["exit code 5", "exit code 6"]);
    } finally {
      await (again ?? agent).crash();
      await server.stop();
      cleanup(agent.work, server.data);
    }
  }, 90_000);
});

it("the compiled launcher writes the job's start time under its pid and tells it with the start", async () => {
  const program = compiledLauncher();
  expect(program).not.toBeNull();
  const root = tempDir("steward-launcher-ticks-");
  try {
    const dir = join(root, "j1.0.1");
    mkdirSync(join(dir, "run"), { recursive: true });
    const child = spawn(program!, [], { cwd: root, stdio: ["pipe", "pipe", "ignore"] });
    let out = "";
    child.stdout.on("data", (chunk) => {
      out += String(chunk);
    });
    const exited = new Promise((resolve) => child.on("exit", resolve));
    child.stdin.end(
      encodeLaunch(root, {
        dir,
        times: false,
        exec: { cwd: join(dir, "run"), cgroupProcs: [], env: {}, argv: ["sleep", "0.2"] },
      }),
    );
    await exited;
    const started = /^started (\d+):(\d+) j1\.0\.1$/m.exec(out);
    expect(started, out).not.toBeNull();
    const [, pid, ticks] = started!;
    expect(readFileSync(join(dir, "pid"), "utf8")).toBe(`${pid}\n${ticks}\n`);
    expect(out).toMatch(/^exited 0 j1\.0\.1$/m);
  } finally {
    cleanup(root);
  }
});

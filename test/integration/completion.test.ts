// Shell completion: `steward completion bash` defines a completion function that a real bash runs
// with COMP_WORDS/COMP_CWORD set as the shell sets them on TAB; command names and options come from
// the script, job ids and workflow ids (flow-N) from the running server, taken as data. The zsh and
// fish scripts must at least parse.

import { execFileSync, spawnSync } from "node:child_process";
import { chmodSync, existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  api,
  cleanup,
  cli,
  freePort,
  getJob,
  ROOT,
  type StewardProcess,
  startUp,
  tempDir,
  waitFor,
} from "../helpers/steward.ts";

let steward: StewardProcess;
let work: string;
const scripts: Record<string, string> = {};

function installed(shell: string): boolean {
  return spawnSync("sh", ["-c", `command -v ${shell}`]).status === 0;
}

beforeAll(async () => {
  steward = await startUp({ agents: 1, slots: 2 });
  work = tempDir("steward-completion-");
  for (const shell of ["bash", "zsh", "fish"]) {
    const result = await cli(null, ["completion", shell]);
    expect(result.code, result.stderr).toBe(0);
    scripts[shell] = join(work, `steward.${shell}`);
    writeFileSync(scripts[shell], result.stdout);
  }
});

afterAll(async () => {
  await steward?.stop();
  cleanup(steward?.data, work);
});

/** Runs bash with the completion script sourced and `steward` (bin/, unless `bin` says) on the PATH. */
function bash(
  script: string,
  url = steward.url,
  bin = join(ROOT, "bin"),
): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync("bash", ["-c", `source "$1"\n${script}`, "bash", scripts.bash], {
    encoding: "utf8",
    env: {
      ...process.env,
      PATH: `${bin}:${process.env.PATH}`,
      STEWARD_URL: url,
      STEWARD_TOKEN: steward.token,
    },
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** The words bash's completion function offers for `words`, the last one being completed. */
function offered(...words: string[]): string[] {
  return offeredWith(steward.url, words);
}

function offeredWith(url: string, words: string[], bin?: string): string[] {
  const quoted = words.map((word) => `'${word}'`).join(" ");
  const result = bash(
    `COMP_WORDS=(${quoted}); COMP_CWORD=${words.length - 1}; _steward; printf '%s\\n' "\${COMPREPLY[@]}"`,
    url,
    bin,
  );
  expect(result.status, result.stderr).toBe(0);
  return result.stdout.split("\n").filter(Boolean);
}

describe("steward completion", () => {
  it("bash: the script registers a completion for steward", () => {
    const result = bash("source <(steward completion bash) && complete -p steward");
    expect(result.status, result.stderr).toBe(0);
    expect(result.stdout).toContain("-F _steward steward");
  });

  it("bash: a command's name, its subcommands and its options", () => {
    expect(offered("steward", "sh")).toEqual(["show", "share"]);
    expect(offered("steward", "token", "")).toEqual(["create", "list", "revoke"]);
    expect(offered("steward", "logs", "--f")).toEqual(["--follow"]);
    expect(offered("steward", "--ver")).toEqual(["--version"]);
  });

  it("bash and fish: run's options, then after -- a command's name, then files; submit's --dry-run", () => {
    expect(offered("steward", "ru")).toEqual(["run"]);
    expect(offered("steward", "run", "--det")).toEqual(["--detach"]);
    expect(offered("steward", "submit", "--dry")).toEqual(["--dry-run"]);
    expect(offered("steward", "run", "--cpus", "2", "--", "hostnam")).toContain("hostname");
    // The command's own options and files are the shell's to complete, not steward's.
    expect(offered("steward", "run", "--", "ls", "--det")).toEqual([]);
    if (installed("fish")) {
      const byFish = (line: string) =>
        execFileSync("fish", ["-c", `source $argv[1]; complete -C "${line}"`, scripts.fish], {
          encoding: "utf8",
          env: { ...process.env, PATH: `${join(ROOT, "bin")}:${process.env.PATH}` },
        });
      expect(byFish("steward run --det")).toMatch(/^--detach/m);
      expect(byFish("steward run -- hostnam")).toMatch(/^hostname/m);
      expect(byFish(`steward run -- ls ${ROOT}/packag`)).toContain(`${ROOT}/package.json`);
    }
  });

  it("bash and fish: the options of the commands workflow engines and scripts use", () => {
    expect(offered("steward", "st")).toEqual(["status"]);
    expect(offered("steward", "status", "--f")).toEqual(["--format"]);
    expect(offered("steward", "cancel", "--q")).toEqual(["--quiet"]);
    expect(offered("steward", "run", "--std").sort()).toEqual(["--stderr", "--stdout"]);
    expect(offered("steward", "ps", "--fo")).toEqual(["--format"]);
    expect(offered("steward", "ps", "--no-")).toEqual(["--no-header"]);
    // A value of --format, --stdout or --stderr is the shell's own (file) completion.
    expect(offered("steward", "run", "--stdout", "")).toEqual([]);
    if (installed("fish")) {
      const byFish = (line: string) =>
        execFileSync("fish", ["-c", `source $argv[1]; complete -C "${line}"`, scripts.fish], {
          encoding: "utf8",
          env: { ...process.env, PATH: `${join(ROOT, "bin")}:${process.env.PATH}` },
        });
      expect(byFish("steward status --f")).toMatch(/^--format/m);
      expect(byFish("steward cancel --q")).toMatch(/^--quiet/m);
      expect(byFish("steward run --std")).toMatch(/^--stdout/m);
      expect(byFish("steward ps --no-")).toMatch(/^--no-header/m);
    }
  });

  it("bash: the job ids of the running server for commands that take one", async () => {
    const running = (await api(steward, "POST", "/api/v1/jobs", { command: "sleep 60" })) as { id: string };
    const other = (await api(steward, "POST", "/api/v1/jobs", { command: "sleep 60" })) as { id: string };
    try {
      expect(offered("steward", "logs", "").sort()).toEqual([running.id, other.id].sort());
      expect(offered("steward", "cancel", "").sort()).toEqual([running.id, other.id].sort());
      // Every id a command takes several of: cancel's second, status's (ended ones too).
      expect(offered("steward", "cancel", running.id, "").sort()).toEqual([running.id, other.id].sort());
      expect(offered("steward", "status", "")).toEqual(expect.arrayContaining([running.id, other.id]));
      expect(offered("steward", "show", running.id)).toEqual([running.id]);
      // An option's value is not a job id: the shell's own (file) completion takes it.
      expect(offered("steward", "logs", "--task", "")).toEqual([]);
      if (installed("fish")) {
        const byFish = execFileSync(
          "fish",
          ["-c", 'source $argv[1]; complete -C "steward logs "', scripts.fish],
          {
            encoding: "utf8",
            env: {
              ...process.env,
              PATH: `${join(ROOT, "bin")}:${process.env.PATH}`,
              STEWARD_URL: steward.url,
              STEWARD_TOKEN: steward.token,
            },
          },
        );
        expect(byFish.split("\n").filter(Boolean).sort()).toEqual([running.id, other.id].sort());
      }
    } finally {
      await api(steward, "POST", `/api/v1/jobs/${running.id}/cancel`);
      await api(steward, "POST", `/api/v1/jobs/${other.id}/cancel`);
    }
  });

  it("bash and fish: workflow ids (flow-N) with the job ids, for the commands that take one (not migrate)", async () => {
    const { workflow, jobs } = (await api(steward, "POST", "/api/v1/workflows", {
      jobs: { a: { command: "sleep 60" }, b: { command: "true", dependsOn: ["a"] } },
    })) as { workflow: string; jobs: Record<string, string> };
    const ids = [jobs.a, jobs.b, workflow].sort();
    try {
      // show offers ended jobs too (those of the tests before): these among them.
      expect(offered("steward", "show", "")).toEqual(expect.arrayContaining(ids));
      expect(offered("steward", "cancel", "").sort()).toEqual(ids);
      expect(offered("steward", "fetch", "fl")).toEqual([workflow]);
      expect(offered("steward", "status", "fl")).toEqual([workflow]);
      expect(offered("steward", "update", "").sort()).toEqual(ids);
      expect(offered("steward", "migrate", "").sort()).toEqual([jobs.a, jobs.b].sort());
      if (installed("fish")) {
        const byFish = execFileSync(
          "fish",
          ["-c", 'source $argv[1]; complete -C "steward explain "', scripts.fish],
          {
            encoding: "utf8",
            env: {
              ...process.env,
              PATH: `${join(ROOT, "bin")}:${process.env.PATH}`,
              STEWARD_URL: steward.url,
              STEWARD_TOKEN: steward.token,
            },
          },
        );
        expect(byFish.split("\n").filter(Boolean)).toEqual(expect.arrayContaining(ids));
      }
    } finally {
      await api(steward, "POST", `/api/v1/workflows/${workflow}/cancel`);
      await waitFor("the workflow to end", async () => (await getJob(steward, jobs.a)).state === "cancelled");
    }
  });

  it("bash: ids are data: a word the shell would expand is never offered nor run", () => {
    // A stand-in for steward that answers ids no server gives: a command substitution, a glob.
    const bin = join(work, "fake-bin");
    const mark = join(work, "expanded");
    mkdirSync(bin, { recursive: true });
    writeFileSync(
      join(bin, "steward"),
      `#!/bin/sh
case "$*" in
  *--workflows*) printf '[\\n  {\\n    "workflow": "flow-3",\\n  },\\n  {\\n    "workflow": "flow-$(touch ${mark}w)",\\n  }\\n]\\n' ;;
  *) printf '[\\n  {\\n    "id": "12",\\n  },\\n  {\\n    "id": "$(touch ${mark})",\\n  },\\n  {\\n    "id": "1*",\\n  }\\n]\\n' ;;
esac
`,
    );
    chmodSync(join(bin, "steward"), 0o755);
    const show = offeredWith(steward.url, ["steward", "show", ""], bin);
    const logs = offeredWith(steward.url, ["steward", "logs", "1"], bin);
    expect(existsSync(mark) || existsSync(`${mark}w`), "the shell ran a command of an id").toBe(false);
    expect(show.sort()).toEqual(["12", "flow-3"]);
    expect(logs).toEqual(["12"]);
  });

  it("bash: no job ids, and no error, when the server does not answer", async () => {
    const silent = `http://127.0.0.1:${await freePort()}`;
    expect(offeredWith(silent, ["steward", "show", ""])).toEqual([]);
  });

  it.skipIf(!installed("zsh") && !process.env.CI)(
    "zsh: the script parses and registers steward (skipped when zsh is absent, outside CI)",
    () => {
      execFileSync("zsh", ["-n", scripts.zsh]);
      const registered = execFileSync(
        "zsh",
        ["-c", 'source "$1"; print -r -- $_comps[steward]', "zsh", scripts.zsh],
        {
          encoding: "utf8",
        },
      );
      expect(registered).toContain("_steward");
    },
  );

  it.skipIf(!installed("fish") && !process.env.CI)(
    "fish: the script parses and offers commands (skipped when fish is absent, outside CI)",
    () => {
      execFileSync("fish", ["-n", scripts.fish]);
      const offeredByFish = execFileSync(
        "fish",
        ["-c", 'source $argv[1]; complete -C "steward sh"', scripts.fish],
        {
          encoding: "utf8",
        },
      );
      expect(offeredByFish).toMatch(/^show\t/m);
    },
  );
});

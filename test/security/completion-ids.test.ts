// Shell completion takes the ids a server answers as data (issue: a server, or anything on a
// plain-HTTP path to it, answering a job id `1$(touch /tmp/x)` ran that command at TAB): in bash,
// zsh (which runs bash's function through its compatibility layer) and fish, an id holding a
// command substitution, backquotes, a separator or a glob is neither run nor offered; ids of the
// shapes Steward makes are offered. The ids come from a stand-in `steward`
// (helpers/completion-stand-in.ts), since no real server makes such ids.

import { execFileSync, spawnSync } from "node:child_process";
import { existsSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { completionStandIn } from "../helpers/completion-stand-in.ts";
import { cleanup, cli, tempDir } from "../helpers/steward.ts";

const work = tempDir("steward-completion-ids-");
const mark = join(work, "ran");

afterAll(() => cleanup(work));

const hostile = [
  `$(touch ${mark})`,
  `\`touch ${mark}\``,
  `1;touch ${mark}`,
  `1|touch ${mark}`,
  `1&&touch ${mark}`,
  "1*",
  "$((1+1))",
  `\${HOME}`,
  "1 2",
  `1\ntouch ${mark}`,
];
const good = ["12", "job-7.a"];
const bin = completionStandIn(work, [...good, ...hostile], ["flow-3", `flow-$(touch ${mark})`, "flow-1*"]);

function installed(shell: string): boolean {
  return spawnSync("sh", ["-c", `command -v ${shell}`]).status === 0;
}

/** The shell's completion script in a file (and no mark left by another shell's case). */
async function script(shell: "bash" | "zsh" | "fish"): Promise<string> {
  rmSync(mark, { force: true });
  const file = join(work, `completion.${shell}`);
  writeFileSync(file, (await cli(null, ["completion", shell])).stdout);
  return file;
}

const env = () => ({ ...process.env, PATH: `${bin}:${process.env.PATH}`, HOME: work, ZDOTDIR: work });

describe("completion ids are data", () => {
  it("bash offers the ids of Steward's shapes only and runs none", async () => {
    const file = await script("bash");
    const offered = execFileSync(
      "bash",
      [
        "-c",
        `source "$1"; COMP_WORDS=(steward show ''); COMP_CWORD=2; _steward; printf '%s\\n' "\${COMPREPLY[@]}"`,
        "bash",
        file,
      ],
      { encoding: "utf8", env: env() },
    );
    expect(existsSync(mark), "bash ran a command of an id").toBe(false);
    expect(offered.split("\n").filter(Boolean).sort()).toEqual([...good, "flow-3"].sort());
  });

  it.skipIf(!installed("zsh") && !process.env.CI)(
    "zsh's ids are bash's, taken alike, and run none",
    async () => {
      const file = await script("zsh");
      const offered = execFileSync(
        "zsh",
        ["-f", "-c", 'source "$1"; _steward_job_ids --workflows', "zsh", file],
        {
          encoding: "utf8",
          env: env(),
        },
      );
      expect(existsSync(mark), "zsh ran a command of an id").toBe(false);
      expect(offered.split("\n").filter(Boolean).sort()).toEqual([...good, "flow-3"].sort());
    },
  );

  it.skipIf(!installed("fish") && !process.env.CI)(
    "fish offers the ids of Steward's shapes only and runs none",
    async () => {
      const file = await script("fish");
      const offered = execFileSync("fish", ["-c", 'source $argv[1]; complete -C "steward show "', file], {
        encoding: "utf8",
        env: env(),
      });
      expect(existsSync(mark), "fish ran a command of an id").toBe(false);
      // fish adds a description after a tab to some words: the word is what comes before it.
      const words = offered
        .split("\n")
        .filter(Boolean)
        .map((line) => line.split("\t")[0]);
      expect(words.sort()).toEqual([...good, "flow-3"].sort());
    },
  );
});

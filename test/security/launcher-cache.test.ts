// The compiled launcher kept in STEWARD_LAUNCHER_CACHE runs every job (as root on an agent that
// runs jobs as their owners). A cache folder or a kept program of another account, or one others
// may write, is refused with a warning in the agent's log, and jobs start through the interpreted
// launcher (perl) instead: a program planted there never runs. The table checks the rule; the
// agents are real processes with a planted program that would leave a mark if it ran.

import { createHash } from "node:crypto";
import { chmodSync, chownSync, existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { distrust } from "../../src/agent/launcher/launcher-cache-trust.ts";
import {
  cleanup,
  cli,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
} from "../helpers/steward.ts";

const NOBODY = 65534;
const root = process.geteuid?.() === 0;

describe("distrust", () => {
  it.each([
    [{ uid: 1000, mode: 0o40755, link: false }, 1000, false, null],
    [{ uid: 0, mode: 0o40755, link: false }, 1000, false, null],
    [{ uid: 1001, mode: 0o40755, link: false }, 1000, false, "is owned by uid 1001"],
    [{ uid: 1000, mode: 0o40775, link: false }, 1000, false, "may be written by other accounts (mode 0775)"],
    [{ uid: 1000, mode: 0o100757, link: false }, 1000, false, "may be written by other accounts (mode 0757)"],
    [{ uid: 0, mode: 0o41777, link: false }, 1000, true, null],
    [{ uid: 0, mode: 0o40777, link: false }, 1000, true, "may be written by other accounts (mode 0777)"],
    [{ uid: 0, mode: 0o41777, link: false }, 1000, false, "may be written by other accounts (mode 01777)"],
    [{ uid: 1000, mode: 0o120777, link: true }, 1000, false, "is a link"],
  ])("%o for uid %d (sticky allowed: %s): %s", (what, uid, sticky, reason) => {
    const found = distrust(what, uid, sticky);
    if (reason === null) expect(found).toBeNull();
    else expect(found).toContain(reason);
  });
});

let server: StewardProcess & { joinToken: string };
const dir = tempDir("steward-launcher-cache-");

beforeAll(async () => {
  server = await startServerProcess();
});

afterAll(async () => {
  await server?.stop();
  cleanup(server?.data, dir);
});

/** A cache holding a planted `launcher` that marks `mark` when it runs (it runs as a launcher would with no input: exits 0). */
function plantedCache(name: string, mark: string): { cache: string; program: string } {
  const cache = join(dir, name);
  const program = keptProgram(cache);
  mkdirSync(dirname(program), { recursive: true, mode: 0o755 });
  writeFileSync(program, `#!/bin/sh\necho ran as $(id -u) >> ${mark}\ncat >/dev/null\nexit 0\n`, {
    mode: 0o755,
  });
  return { cache, program };
}

/** Where the agent keeps the compiled launcher in `cache` (src/agent/launcher/launcher.ts). */
function keptProgram(cache: string): string {
  const source = readFileSync(join(import.meta.dirname, "../../src/agent/launcher/launcher.c"));
  const hash = createHash("sha256").update(source).digest("hex").slice(0, 16);
  return join(cache, `${hash}-${process.platform}-${process.arch}`, "launcher");
}

/** Runs one job on an agent with this cache; its output, and whether the job succeeded. */
async function agentWith(name: string, cache: string): Promise<{ log: string; succeeded: boolean }> {
  const agent = await startAgentProcess({
    name,
    servers: [server.url],
    joinToken: server.joinToken,
    prefix: ["env", `STEWARD_LAUNCHER_CACHE=${cache}`],
  });
  try {
    const ran = await cli(server, ["run", "--requirements", `host.name == "${name}"`, "--", "echo", "hello"]);
    return { log: agent.output(), succeeded: ran.code === 0 && ran.stdout.includes("hello") };
  } finally {
    await agent.stop();
  }
}

describe.skipIf(!root)("a launcher cache the agent may not trust", () => {
  it.each([
    [
      "another account's program",
      (c: { cache: string; program: string }) => chownSync(c.program, NOBODY, NOBODY),
      "is owned by uid 65534",
    ],
    [
      "a program others may write",
      (c: { program: string }) => chmodSync(c.program, 0o777),
      "may be written by other accounts (mode 0777)",
    ],
    [
      "a cache folder others may write",
      (c: { cache: string }) => chmodSync(c.cache, 0o777),
      "may be written by other accounts (mode 0777)",
    ],
    [
      "another account's cache folder",
      (c: { cache: string }) => chownSync(c.cache, NOBODY, NOBODY),
      "is owned by uid 65534",
    ],
  ])(
    "%s: refused with a warning; the job runs through perl",
    async (what, plant, reason) => {
      const name = `cache-${what.replaceAll(/[^a-z]+/g, "-")}`.slice(0, 40);
      const mark = join(dir, `${name}.ran`);
      const planted = plantedCache(name, mark);
      plant(planted);
      const { log, succeeded } = await agentWith(name, planted.cache);
      expect(existsSync(mark), existsSync(mark) ? readFileSync(mark, "utf8") : "").toBe(false);
      expect(succeeded, log).toBe(true);
      expect(log).toContain("the launcher cache is not trusted");
      expect(log).toContain(reason);
      expect(log).toContain("interpreted launcher");
    },
    60_000,
  );

  it("a cache of the agent's own, writable by it alone, keeps and uses the compiled launcher", async () => {
    const cache = join(dir, "own");
    mkdirSync(cache, { mode: 0o700 });
    const { log, succeeded } = await agentWith("cache-own", cache);
    expect(succeeded, log).toBe(true);
    expect(log).not.toContain("not trusted");
    expect(existsSync(keptProgram(cache))).toBe(true);
  }, 30_000);
});

// The data flags of the one-machine commands, end to end: `steward up --shared PATH --cache-gb N`
// gives its agents the shared folder (a host fact, in the hosts API) and the cache's capacity (0:
// no cache/ in their work folders), and `steward run --workdir PATH` runs the command in place in
// that folder (a relative one taken from the current folder), nothing uploaded or collected.

import { existsSync, mkdirSync, readFileSync, realpathSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Host } from "../../src/common/api/hosts.ts";
import { api, cleanup, cli, type StewardProcess, startUp, tempDir } from "../helpers/steward.ts";

let steward: StewardProcess;
let shared: string;
let here: string;

beforeAll(async () => {
  shared = realpathSync(tempDir("steward-up-shared-"));
  here = tempDir("steward-up-here-");
  steward = await startUp({ agents: 1, args: ["--shared", shared, "--cache-gb", "0"] });
});

afterAll(async () => {
  await steward?.stop();
  cleanup(steward?.data, shared, here);
});

describe("steward up --shared, --cache-gb and run --workdir", () => {
  it("gives its agents the shared folder", async () => {
    const hosts = (await api(steward, "GET", "/api/v1/hosts")) as Host[];
    expect(hosts.map((host) => [host.name, host.facts.shared])).toStrictEqual([["local-1", [shared]]]);
  });

  it("runs a command in place with run --workdir, its files left in the folder", async () => {
    const run = join(shared, "run 1");
    mkdirSync(run);
    writeFileSync(join(run, "mesh"), "21\n");
    const ran = await cli(steward, [
      "run",
      "--workdir",
      run,
      "--",
      "sh",
      "-c",
      "pwd > where; read n < mesh; echo $((n * 2))",
    ]);
    expect(ran, ran.stderr).toMatchObject({ code: 0, stdout: "42\n" });
    expect(readFileSync(join(run, "where"), "utf8")).toBe(`${run}\n`);
  });

  it("takes a relative --workdir from the current folder", async () => {
    mkdirSync(join(shared, "run-2"));
    const ran = await cli(steward, ["run", "--workdir", "run-2", "--", "sh", "-c", "pwd > where"], {
      cwd: shared,
    });
    expect(ran.code, ran.stderr).toBe(0);
    expect(readFileSync(join(shared, "run-2", "where"), "utf8")).toBe(`${join(shared, "run-2")}\n`);
  });

  it("names --workdir in a refusal: a folder its agents do not share", async () => {
    const ran = await cli(steward, ["run", "--workdir", here, "--", "true"]);
    expect(ran.code).toBe(2);
    expect(ran.stderr).toContain(`--workdir: ${here} is in no folder the hosts share (they share ${shared})`);
  });

  it("gives its agents the cache's capacity: with 0, an uploaded input leaves no cache/ behind", async () => {
    writeFileSync(join(here, "numbers"), "1\n2\n");
    const ran = await cli(steward, ["run", "--input", "numbers", "--", "sh", "-c", "cat numbers"], {
      cwd: here,
    });
    expect(ran, ran.stderr).toMatchObject({ code: 0, stdout: "1\n2\n" });
    const work = join(realpathSync(steward.data), "agents", "local-1");
    expect(existsSync(work)).toBe(true);
    expect(existsSync(join(work, "cache"))).toBe(false);
  });
});

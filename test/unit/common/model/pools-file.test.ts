// The pools file's rules one by one, at their edges (the pools' own tests, test/unit/broker/pools/,
// read it with the pilots): which names, accounts and pilot folders it takes, a backlog up to
// maxPilots, and each refusal with its field and its whole message.

import { describe, expect, it } from "vitest";
import { PoolsFileError, parsePoolsFile } from "../../../../src/common/model/pools-file.ts";

/** The pools file's refusal as its field and message, or null when it is taken. */
function refusal(text: string): { field: string; message: string } | null {
  try {
    parsePoolsFile(text);
    return null;
  } catch (error) {
    if (!(error instanceof PoolsFileError)) throw error;
    expect(error.name).toBe("PoolsFileError");
    return { field: error.field, message: error.message };
  }
}

const NAME_RULE = "must be 1 to 63 lower-case letters, digits, - or _, not starting with - or _";
const ACCOUNT_RULE =
  "must be a local account name (letters, digits, _, . or -, not starting with a digit, . or -)";

describe("a pool's name", () => {
  it.each<[string, string, boolean]>([
    ["a letter", "a", true],
    ["a digit", "7", true],
    ["letters, digits, - and _", "hpc-2_x", true],
    ["63 characters", "a".repeat(63), true],
    ["64 characters", "a".repeat(64), false],
    ["starting with -", "-a", false],
    ["starting with _", "_a", false],
    ["upper case first", "Hpc", false],
    ["upper case after", "hpC", false],
    ["a space after", "hp c", false],
    ["a dot", "hp.c", false],
  ])("%s: %s", (_, name, taken) => {
    expect(refusal(`pools:\n  - {name: "${name}", driver: slurm}\n`)).toEqual(
      taken ? null : { field: "pools[0].name", message: `pools[0].name: ${NAME_RULE}` },
    );
  });
});

describe("the pilots' account", () => {
  it.each<[string, string, boolean]>([
    ["letters", "steward", true],
    ["upper case", "Steward", true],
    ["starting with _", "_pilot", true],
    ["digits, _, . and - after", "p1_a.b-c", true],
    ["32 characters", "a".repeat(32), true],
    ["33 characters", "a".repeat(33), false],
    ["starting with a digit", "1pilot", false],
    ["starting with .", ".pilot", false],
    ["a space after", "pi lot", false],
    ["a slash after", "pi/lot", false],
  ])("%s: %s", (_, account, taken) => {
    expect(refusal(`pools:\n  - {name: a, driver: slurm, account: "${account}"}\n`)).toEqual(
      taken ? null : { field: "pools[0].account", message: `pools[0].account: ${ACCOUNT_RULE}` },
    );
  });
});

describe("the pilots' folder", () => {
  it.each<[string, string, boolean]>([
    ["the root", "/", true],
    ["an absolute path", "/scratch/pilots", true],
    ["a relative path", "scratch/pilots", false],
    ["a NUL after", "/scratch\\0x", false],
  ])("%s: %s", (_, folder, taken) => {
    expect(refusal(`pools:\n  - {name: a, driver: slurm, pilotDir: "${folder}"}\n`)).toEqual(
      taken ? null : { field: "pools[0].pilotDir", message: "pools[0].pilotDir: must be an absolute path" },
    );
  });
});

describe("the pools file's refusals", () => {
  it.each<[string, string, { field: string; message: string } | null]>([
    ["a backlog of maxPilots", "pools:\n  - {name: a, driver: slurm, maxPilots: 3, backlog: 3}\n", null],
    [
      "a backlog above maxPilots",
      "pools:\n  - {name: a, driver: slurm, maxPilots: 3, backlog: 4}\n",
      { field: "pools[0].backlog", message: "pools[0].backlog: must not exceed maxPilots" },
    ],
    [
      "the default pool's name",
      "pools:\n  - {name: b, driver: slurm}\n  - {name: default, driver: slurm}\n",
      { field: "pools[1].name", message: 'pools[1].name: "default" is the pool of agents started by hand' },
    ],
    [
      "a name twice, after another",
      "pools:\n  - {name: a, driver: slurm}\n  - {name: b, driver: slurm}\n  - {name: a, driver: slurm}\n",
      { field: "pools[2].name", message: "pools[2].name: a is named twice" },
    ],
    ["two names", "pools:\n  - {name: a, driver: slurm}\n  - {name: b, driver: slurm}\n", null],
    [
      "a relative shared folder",
      "pools:\n  - {name: a, driver: slurm, shared: [data]}\n",
      {
        field: "pools[0].shared[0]",
        message: "pools[0].shared[0]: must be an absolute path (starting with /)",
      },
    ],
    ["an empty file", "", { field: "", message: "a pools file must be a mapping with a `pools` list" }],
    ["a text", "pools", { field: "", message: "a pools file must be a mapping with a `pools` list" }],
    ["a list", "- pools\n", { field: "", message: "a pools file must be a mapping with a `pools` list" }],
  ])("%s", (_, text, refused) => {
    expect(refusal(text)).toEqual(refused);
  });

  it("names no field for text that is not YAML", () => {
    expect(refusal("pools: [")).toMatchObject({ field: "" });
  });
});

describe("the pools taken", () => {
  it("are every pool of the file, in order, each shared folder once", () => {
    const pools = parsePoolsFile(
      "pools:\n  - {name: a, driver: slurm, shared: [/x, /y, /x/]}\n  - {name: b, driver: slurm, partition: gpu}\n",
    );
    expect(pools.map((pool) => [pool.name, pool.partition, pool.shared])).toEqual([
      ["a", undefined, ["/x", "/y"]],
      ["b", "gpu", []],
    ]);
  });
});

// The agent's --shared PATH (repeatable, `shared:` in its config file): absolute, without `..`, a
// folder that is there; kept normalised, each once, at most ASSUMED_MAX_SHARED_FOLDERS.

import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { InvalidArgumentError } from "commander";
import { afterAll, describe, expect, it } from "vitest";
import { ASSUMED_MAX_SHARED_FOLDERS } from "../../../src/common/model/cel-cost.ts";
import { sharedFolder } from "../../../src/daemons/options.ts";
import { cleanup, tempDir } from "../../helpers/steward.ts";

const dir = tempDir("steward-shared-flag-");
afterAll(() => cleanup(dir));
const data = join(dir, "data");
const scratch = join(dir, "scratch");
mkdirSync(data);
mkdirSync(scratch);
writeFileSync(join(dir, "a-file"), "");

describe("--shared", () => {
  it("takes folders that are there, normalised, each once, in order", () => {
    let folders = sharedFolder(`${data}/`);
    folders = sharedFolder(scratch, folders);
    folders = sharedFolder(`${data}//./`, folders);
    expect(folders).toEqual([data, scratch]);
  });

  it.each<[string, string, string]>([
    ["a relative path", "data", "--shared data: must be an absolute path (starting with /)"],
    [
      "a path with ..",
      `${data}/../scratch`,
      `--shared ${data}/../scratch: must not contain .. (name the folder itself)`,
    ],
    [
      "a folder that is not there",
      join(dir, "missing"),
      `--shared ${join(dir, "missing")}: no such folder (a shared folder must be there when the agent starts: is it mounted?)`,
    ],
    ["a file", join(dir, "a-file"), `--shared ${join(dir, "a-file")}: not a folder`],
  ])("refuses %s, naming it", (_, value, message) => {
    expect(() => sharedFolder(value)).toThrow(InvalidArgumentError);
    expect(() => sharedFolder(value)).toThrow(message);
  });

  it(`takes at most ${ASSUMED_MAX_SHARED_FOLDERS} folders`, () => {
    const many: string[] = [];
    for (let i = 0; i < ASSUMED_MAX_SHARED_FOLDERS; i++) {
      const folder = join(dir, `many-${i}`);
      mkdirSync(folder);
      many.push(folder);
    }
    const extra = join(dir, "one-more");
    mkdirSync(extra);
    expect(() => sharedFolder(extra, many)).toThrow(
      `--shared: at most ${ASSUMED_MAX_SHARED_FOLDERS} folders`,
    );
    // One already there is no more.
    expect(sharedFolder(many[0], many)).toBe(many);
  });
});

// Where a field is in a job file's text: its key's line and column (an item's, in a list), or the
// nearest enclosing key there is; none for text that is not YAML, or, asked exactly, for a field
// the text does not have. And an error given the place of its field, once.

import { describe, expect, it } from "vitest";
import type { FieldPath, TextPlace } from "../../../../src/common/model/jobfile-error.ts";
import { JobFileError } from "../../../../src/common/model/jobfile-error.ts";
import { placeJobFileError, placeOfField } from "../../../../src/common/model/jobfile-place.ts";

describe("placeOfField", () => {
  it.each<[string, string, FieldPath, boolean, TextPlace | null]>([
    ["a key", "name: x\ncommand: y\n", ["command"], false, { line: 2, column: 1 }],
    [
      "a nested key",
      "name: x\nresources:\n  cpus: 2\n  memoryMb: 5\n",
      ["resources", "memoryMb"],
      false,
      { line: 4, column: 3 },
    ],
    ["an item of a list", "inputs:\n  - a\n  - b\n", ["inputs", 1], false, { line: 3, column: 5 }],
    [
      "a key of an item",
      "inputs:\n  - url: u\n  - url: v\n    as: w\n",
      ["inputs", 1, "as"],
      false,
      { line: 4, column: 5 },
    ],
    ["a key written as a number", "env:\n  5: x\n", ["env", "5"], false, { line: 2, column: 3 }],
    ["the file as a whole", "\n# a comment\nname: x\n", [], false, { line: 3, column: 1 }],
    [
      "a key not there: its mapping's",
      "name: x\nresources:\n  cpus: 2\n",
      ["resources", "gpus"],
      false,
      { line: 2, column: 1 },
    ],
    ["a key not there, exactly: none", "name: x\nresources:\n  cpus: 2\n", ["resources", "gpus"], true, null],
    [
      "a key there, exactly",
      "name: x\nresources:\n  cpus: 2\n",
      ["resources", "cpus"],
      true,
      { line: 3, column: 3 },
    ],
    ["the file, exactly", "name: x\n", [], true, { line: 1, column: 1 }],
    [
      "an item past the list's end: the list's",
      "name: x\ninputs:\n  - a\n",
      ["inputs", 3],
      false,
      { line: 2, column: 1 },
    ],
    [
      "a key under text: the text's",
      "name: x\ncommand: y\n",
      ["command", "z"],
      false,
      { line: 2, column: 1 },
    ],
    [
      "an index under text: the text's",
      "name: x\ncommand: y\n",
      ["command", 0],
      false,
      { line: 2, column: 1 },
    ],
    ["a key of a list: the list's", "name: x\ninputs: [a]\n", ["inputs", "a"], false, { line: 2, column: 1 }],
    ["a key given twice: the first", "name: x\nname: y\n", ["name"], false, { line: 1, column: 1 }],
    [
      "a key with no value, then under it",
      "name: x\nresources:\n",
      ["resources", "cpus"],
      false,
      { line: 2, column: 1 },
    ],
    ["text that is not YAML", "a: [", ["a"], false, null],
    ["empty text", "", [], false, null],
    ["a comment alone", "# nothing\n", ["name"], false, null],
  ])("%s", (_, text, path, exact, place) => {
    expect(placeOfField(text, path, exact)).toEqual(place);
  });

  it("is not exact unless asked", () => {
    expect(placeOfField("name: x\n", ["command"])).toEqual({ line: 1, column: 1 });
  });
});

describe("placeJobFileError", () => {
  it("gives an error the place of its field", () => {
    const placed = placeJobFileError(
      new JobFileError("resources.cpus", "too many"),
      "resources:\n  cpus: 9\n",
    );
    expect([placed.place, placed.message]).toEqual([
      { line: 2, column: 3 },
      "line 2, column 3: resources.cpus: too many",
    ]);
  });

  it("keeps the place an error has", () => {
    const error = new JobFileError("name", "bad", { line: 7, column: 2 });
    expect(placeJobFileError(error, "name: x\n")).toBe(error);
  });

  it("keeps an error as it is when its text has no place", () => {
    const error = new JobFileError("name", "bad");
    expect(placeJobFileError(error, "a: [")).toBe(error);
  });
});

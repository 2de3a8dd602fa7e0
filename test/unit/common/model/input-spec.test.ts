// A job's inputs as tables: paths and URL inputs side by side, the names URL inputs get in the
// working folder (of an s3: URL, its key's last segment), and each malformed URL input refused
// naming its field (a malformed s3: URL saying what is wrong with it: s3-url.test.ts).

import { describe, expect, it } from "vitest";
import {
  defaultInputName,
  fetchedInputs,
  inputName,
  inputNameClash,
  type JobInput,
  uploadedInputs,
} from "../../../../src/common/model/input-spec.ts";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import { JobFileError } from "../../../../src/common/model/jobfile-error.ts";

const HEX = "0123456789abcdef".repeat(4);

/** The field and message a job with these inputs is refused with, or null when it is accepted. */
function refusal(inputs: unknown[]): { field: string; problem: string } | null {
  try {
    validateJobSpec({ command: "true", inputs });
    return null;
  } catch (error) {
    if (!(error instanceof JobFileError)) throw error;
    return { field: error.field, problem: error.problem };
  }
}

describe("URL inputs accepted", () => {
  it.each([
    [
      "the name is the URL's last segment",
      { url: "https://h.example/runs/grid.nc" },
      { url: "https://h.example/runs/grid.nc", as: "grid.nc" },
    ],
    [
      "its query is no part of it",
      { url: "http://h/a/b.dat?v=2" },
      { url: "http://h/a/b.dat?v=2", as: "b.dat" },
    ],
    [
      "percent-encoding decoded",
      { url: "https://h/a%20b.dat" },
      { url: "https://h/a%20b.dat", as: "a b.dat" },
    ],
    [
      "as given, into a folder",
      { url: "https://h/", as: "data/in.txt" },
      { url: "https://h/", as: "data/in.txt" },
    ],
    [
      "an s3: URL's name is its key's last segment",
      { url: "s3://climate/runs/a%20b.nc" },
      { url: "s3://climate/runs/a%20b.nc", as: "a b.nc" },
    ],
    [
      "a digest, lowered",
      { url: "https://h/x", sha256: HEX.toUpperCase() },
      { url: "https://h/x", sha256: HEX, as: "x" },
    ],
  ])("%s", (_, input, fetched) => {
    const spec = validateJobSpec({ command: "true", inputs: ["prog", input] });
    expect(uploadedInputs(spec.inputs)).toStrictEqual(["prog"]);
    expect(fetchedInputs(spec.inputs)).toStrictEqual([fetched]);
  });

  it("a job of URL inputs alone uploads nothing", () => {
    const spec = validateJobSpec({
      command: "true",
      inputs: [{ url: "https://h/a" }, { url: "https://h/b" }],
    });
    expect(uploadedInputs(spec.inputs)).toStrictEqual([]);
    expect(fetchedInputs(spec.inputs).map((input) => input.as)).toStrictEqual(["a", "b"]);
  });
});

describe("URL inputs refused, naming the field", () => {
  it.each([
    ["an s3: URL without a key", [{ url: "s3://bucket/" }], "inputs[0].url", "names no key: s3://bucket/key"],
    [
      "an s3: URL whose key ends in /",
      [{ url: "s3://bucket/dir/" }],
      "inputs[0].url",
      "names no file at the end of its path: give as",
    ],
    [
      "another scheme",
      [{ url: "ftp://h/x" }],
      "inputs[0].url",
      "must be an http:, https: or s3: URL, not ftp:",
    ],
    ["not a URL", [{ url: "data.bin" }], "inputs[0].url", "is not a URL"],
    ["a URL left out", [{ sha256: HEX }], "inputs[0].url", "required"],
    [
      "a malformed digest",
      [{ url: "https://h/x", sha256: "abc" }],
      "inputs[0].sha256",
      "must be a SHA-256 digest: 64 hexadecimal digits",
    ],
    [
      "as leaving the folder",
      [{ url: "https://h/x", as: "../x" }],
      "inputs[0].as",
      '"../x" leaves its folder',
    ],
    [
      "as absolute",
      [{ url: "https://h/x", as: "/etc/x" }],
      "inputs[0].as",
      '"/etc/x" must be a relative path',
    ],
    [
      "no file name in the URL",
      [{ url: "https://h/dir/" }],
      "inputs[0].url",
      "names no file at the end of its path: give as",
    ],
    [
      "a last segment that leaves the folder",
      [{ url: "https://h/a%2F..%2F..%2Fx" }],
      "inputs[0].url",
      'its last segment "a/../../x" leaves its folder: give as',
    ],
    ["an unknown key", ["a", { url: "https://h/x", name: "y" }], "inputs[1].name", "unknown key"],
    ["neither a path nor a mapping", [42], "inputs[0]", "expected string or object"],
    [
      "a name another input has",
      ["x", { url: "https://h/x" }],
      "inputs[1].url",
      '"x" is also the name of inputs[0] in the working folder',
    ],
    [
      "two URL inputs of one name",
      [{ url: "https://h/x" }, { url: "https://g/y", as: "x" }],
      "inputs[1].as",
      '"x" is also the name of inputs[0] in the working folder',
    ],
    [
      "a path after a URL input of its name",
      [{ url: "https://h/x" }, "x"],
      "inputs[1]",
      '"x" is also the name of inputs[0] in the working folder',
    ],
  ])("%s", (_, inputs, field, problem) => {
    expect(refusal(inputs)).toStrictEqual({ field, problem });
  });

  it("leaves a path given twice as it always was", () => {
    expect(refusal(["x", "x"])).toBeNull();
  });
});

describe("defaultInputName", () => {
  it.each([
    ["https://h/a/b", "b"],
    ["https://h/a/b/", null],
    ["https://h", null],
    ["https://h/%E2%82%AC.txt", "€.txt"],
    ["https://h/%E2%82", "%E2%82"],
    ["s3://bkt/k", "k"],
    ["s3://bkt/a/b.nc", "b.nc"],
    ["s3://bkt/a/", null],
    ["s3://bkt", null],
    ["s3://bkt/runs/a%2Fb.nc", "b.nc"],
    ["not a URL", null],
  ])("%s", (url, name) => {
    expect(defaultInputName(url)).toBe(name);
  });
});

describe("inputName", () => {
  it.each<[string, JobInput, string]>([
    ["a path", "data/x.csv", "data/x.csv"],
    ["a URL's `as`", { url: "https://h/a/b", as: "c" }, "c"],
    ["a URL's last segment", { url: "https://h/a/b" }, "b"],
    ["a URL that names none", { url: "https://h/" }, ""],
  ])("%s", (_, input, name) => {
    expect(inputName(input)).toBe(name);
  });
});

describe("inputNameClash", () => {
  it.each<[string, JobInput[], { field: string; message: string } | null]>([
    ["none", ["a", { url: "https://h/b" }], null],
    [
      "a URL input after two paths of its name: the first named",
      ["x", "x", { url: "https://h/x" }],
      { field: "inputs[2].url", message: '"x" is also the name of inputs[0] in the working folder' },
    ],
    [
      "a path after a URL input's `as`",
      [{ url: "https://h/y", as: "x" }, "x"],
      { field: "inputs[1]", message: '"x" is also the name of inputs[0] in the working folder' },
    ],
  ])("%s", (_, inputs, clash) => {
    expect(inputNameClash(inputs)).toEqual(clash);
  });
});

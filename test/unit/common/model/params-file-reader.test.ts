// The parameters file read as its bytes come (model/params-file-reader.ts): the same lines as the
// whole text gives (paramsFileLines), however the bytes are cut into chunks, and a refusal naming
// the bound as soon as the reading passes one.

import { describe, expect, it } from "vitest";
import { MAX_PARAM_CHARS, paramsFileLines } from "../../../../src/common/model/array-params.ts";
import { MAX_PARAMS_FILE_BYTES, ParamsFileReader } from "../../../../src/common/model/params-file-reader.ts";

/** The lines of `text` read in chunks of `size` bytes. */
function readIn(text: string, size: number, bounds?: { maxBytes?: number; maxLines?: number }): string[] {
  const reader = new ParamsFileReader("f", bounds);
  const bytes = Buffer.from(text);
  for (let at = 0; at < bytes.byteLength; at += size) reader.push(bytes.subarray(at, at + size));
  return reader.end();
}

describe("ParamsFileReader", () => {
  it.each<[string]>([["a\nb\nc\n"], ["a\nb\nc"], ["a\r\nb c\r\n"], ["only"], ["été\n日本語\n"], ["x\r"]])(
    "%j gives the lines the whole text gives, in chunks of any size",
    (text) => {
      for (const size of [1, 2, 3, 5, 1024]) expect(readIn(text, size)).toEqual(paramsFileLines(text, "f"));
    },
  );

  // text, chunk size, the bound on bytes, the message.
  it.each<[string, number, number, string]>([
    ["", 4, MAX_PARAMS_FILE_BYTES, "f is empty"],
    ["\n", 1, MAX_PARAMS_FILE_BYTES, "f is empty"],
    ["\n\n", 1, MAX_PARAMS_FILE_BYTES, "f: line 1 is empty"],
    ["\nb\n", 1, MAX_PARAMS_FILE_BYTES, "f: line 1 is empty"],
    ["a\n\nb\n", 2, MAX_PARAMS_FILE_BYTES, "f: line 2 is empty"],
    ["a\n\n", 1, MAX_PARAMS_FILE_BYTES, "f: line 2 is empty"],
    [
      "1\n2\n3\n4\n",
      3,
      MAX_PARAMS_FILE_BYTES,
      "f has more than 3 lines, the most tasks an array may have (one task per line)",
    ],
    ["1\n2\n3\n4", 1, MAX_PARAMS_FILE_BYTES, "f has more than 3 lines"],
    [
      `a\n${"x".repeat(MAX_PARAM_CHARS + 1)}\n`,
      4096,
      MAX_PARAMS_FILE_BYTES,
      `f line 2: longer than ${MAX_PARAM_CHARS} characters`,
    ],
    [
      `${"x".repeat(MAX_PARAM_CHARS + 2)}`,
      7,
      MAX_PARAMS_FILE_BYTES,
      `f line 1: longer than ${MAX_PARAM_CHARS} characters`,
    ],
    [
      "1234\n5678\n",
      3,
      8,
      "f is larger than 8 bytes, the largest parameters file: split the array into several jobs",
    ],
  ])("refuses %j (chunks of %i, at most %i bytes)", (text, size, maxBytes, message) => {
    expect(() => readIn(text, size, { maxBytes, maxLines: 3 })).toThrow(`array.paramsFile: ${message}`);
  });

  it("takes a line of exactly the longest parameter, and as many lines as the bound", () => {
    const longest = "y".repeat(MAX_PARAM_CHARS);
    expect(readIn(`${longest}\r\n`, 1000)).toEqual([longest]);
    expect(readIn("1\n2\n3\n", 1, { maxLines: 3 })).toEqual(["1", "2", "3"]);
  });

  it("refuses a long line as it comes, before its end, holding one line at most", () => {
    const reader = new ParamsFileReader("f");
    const chunk = Buffer.alloc(16 * 1024, "z");
    expect(() => {
      for (let i = 0; i < 1000; i++) reader.push(chunk);
    }).toThrow("f line 1: longer than");
  });

  it("refuses a size over 64 MiB before reading it", () => {
    const reader = new ParamsFileReader("f");
    expect(() => reader.checkSize(MAX_PARAMS_FILE_BYTES)).not.toThrow();
    expect(() => reader.checkSize(MAX_PARAMS_FILE_BYTES + 1)).toThrow(
      "array.paramsFile: f is larger than 64 MiB, the largest parameters file",
    );
  });
});

// The bytes a request asks for of a stored file: the whole, one part, or none it has (416), with
// If-Range tying a part to the file's entity tag.

import { describe, expect, it } from "vitest";
import {
  type ByteRange,
  byteRange,
  contentRange,
  digestEtag,
  type RangeRequest,
} from "../../../../src/broker/api/byte-range.ts";

const ETAG = digestEtag("a".repeat(64));

describe("byteRange of a file of 100 bytes", () => {
  const cases: [string, RangeRequest, string | null, ByteRange][] = [
    ["no Range", {}, ETAG, { kind: "whole" }],
    ["from an offset to the end", { range: "bytes=40-" }, ETAG, { kind: "part", start: 40, end: 99 }],
    ["a closed range", { range: "bytes=10-19" }, ETAG, { kind: "part", start: 10, end: 19 }],
    ["one byte", { range: "bytes=0-0" }, ETAG, { kind: "part", start: 0, end: 0 }],
    ["the last byte by its offset", { range: "bytes=99-" }, ETAG, { kind: "part", start: 99, end: 99 }],
    [
      "an end past the file, cut to it",
      { range: "bytes=90-500" },
      ETAG,
      { kind: "part", start: 90, end: 99 },
    ],
    ["a suffix", { range: "bytes=-30" }, ETAG, { kind: "part", start: 70, end: 99 }],
    ["a suffix longer than the file", { range: "bytes=-300" }, ETAG, { kind: "part", start: 0, end: 99 }],
    [
      "the unit in capitals, spaces around",
      { range: " Bytes=5-6 " },
      ETAG,
      { kind: "part", start: 5, end: 6 },
    ],
    ["a start at the end", { range: "bytes=100-" }, ETAG, { kind: "unsatisfiable" }],
    ["a start past the end", { range: "bytes=250-300" }, ETAG, { kind: "unsatisfiable" }],
    ["a suffix of nothing", { range: "bytes=-0" }, ETAG, { kind: "unsatisfiable" }],
    ["several ranges: the whole", { range: "bytes=0-9,20-29" }, ETAG, { kind: "whole" }],
    ["another unit: the whole", { range: "items=0-9" }, ETAG, { kind: "whole" }],
    ["an end before the start: the whole", { range: "bytes=20-10" }, ETAG, { kind: "whole" }],
    ["no offsets at all: the whole", { range: "bytes=-" }, ETAG, { kind: "whole" }],
    ["garbage: the whole", { range: "bytes=ten-" }, ETAG, { kind: "whole" }],
    ["If-Range its tag", { range: "bytes=40-", ifRange: ETAG }, ETAG, { kind: "part", start: 40, end: 99 }],
    ["If-Range another tag: the whole", { range: "bytes=40-", ifRange: '"b"' }, ETAG, { kind: "whole" }],
    [
      "If-Range its tag made weak: the whole",
      { range: "bytes=40-", ifRange: `W/${ETAG}` },
      ETAG,
      { kind: "whole" },
    ],
    [
      "If-Range a date: the whole",
      { range: "bytes=40-", ifRange: "Wed, 21 Oct 2015 07:28:00 GMT" },
      ETAG,
      { kind: "whole" },
    ],
    [
      "If-Range on a file without a tag: the whole",
      { range: "bytes=40-", ifRange: ETAG },
      null,
      { kind: "whole" },
    ],
    ["a file without a tag, no If-Range", { range: "bytes=40-" }, null, { kind: "part", start: 40, end: 99 }],
    ["If-Range without Range: the whole", { ifRange: ETAG }, ETAG, { kind: "whole" }],
    [
      "an unsatisfiable range under another If-Range: the whole",
      { range: "bytes=500-", ifRange: '"b"' },
      ETAG,
      { kind: "whole" },
    ],
  ];
  it.each(cases)("%s", (_, request, etag, expected) => {
    expect(byteRange(request, 100, etag)).toStrictEqual(expected);
  });
});

describe("byteRange of an empty file", () => {
  it("has no part to give", () => {
    expect(byteRange({ range: "bytes=0-" }, 0, ETAG)).toStrictEqual({ kind: "unsatisfiable" });
    expect(byteRange({ range: "bytes=-5" }, 0, ETAG)).toStrictEqual({ kind: "unsatisfiable" });
    expect(byteRange({}, 0, ETAG)).toStrictEqual({ kind: "whole" });
  });
});

describe("contentRange and digestEtag", () => {
  it("say a part, a 416's size, and a digest's tag", () => {
    expect(contentRange({ start: 40, end: 99 }, 100)).toBe("bytes 40-99/100");
    expect(contentRange(null, 100)).toBe("bytes */100");
    expect(digestEtag("ab")).toBe('"ab"');
  });
});

// What the content cache knows an input by, as tables: the key an input gets (its digest where it
// has a well-formed one, else its URL), the headers of a revalidation and of a resumed transfer,
// a 206's Content-Range, and which URL records a restarted agent keeps.

import { describe, expect, it } from "vitest";
import {
  cacheKeyOf,
  conditionalHeaders,
  contentRangeStart,
  lockNameOf,
  parseUrlRecord,
  resumeHeaders,
  revalidatable,
  urlRecordName,
  validatorsOf,
} from "../../../../src/agent/cache/cache-key.ts";

const HEX = "0123456789abcdef".repeat(4);

describe("cacheKeyOf", () => {
  it.each([
    ["a digest alone", { sha256: HEX }, { kind: "digest", sha256: HEX }],
    ["a digest wins over the URL", { url: "https://h/a", sha256: HEX }, { kind: "digest", sha256: HEX }],
    ["an upper-case digest, lowered", { sha256: HEX.toUpperCase() }, { kind: "digest", sha256: HEX }],
    ["a URL without a digest", { url: "https://h/a" }, { kind: "url", url: "https://h/a" }],
    [
      "a malformed digest falls back to the URL",
      { url: "https://h/a", sha256: "abc" },
      { kind: "url", url: "https://h/a" },
    ],
    ["a null digest (no header) and no URL: uncached", { sha256: null }, null],
    ["a malformed digest and no URL: uncached", { sha256: `${HEX}0` }, null],
    ["nothing", {}, null],
  ])("%s", (_, input, expected) => {
    expect(cacheKeyOf(input)).toStrictEqual(expected);
  });

  it("downloads of a digest and of a URL are one at a time under distinct names", () => {
    expect(lockNameOf({ kind: "digest", sha256: HEX })).toBe(`sha256:${HEX}`);
    expect(lockNameOf({ kind: "url", url: "https://h/a" })).toBe("url:https://h/a");
  });
});

describe("validators and the revalidation's headers", () => {
  it.each([
    ["an ETag and a Last-Modified", { etag: '"v1"', "last-modified": "Mon, 01 Jan 2024 00:00:00 GMT" }, true],
    ["an ETag alone", { etag: 'W/"v1"' }, true],
    ["a Last-Modified alone", { "last-modified": "Mon, 01 Jan 2024 00:00:00 GMT" }, true],
    ["neither", { "content-length": "3" }, false],
  ])("%s", (_, given, expected) => {
    const headers: Record<string, string> = given;
    const validators = validatorsOf(new Headers(headers));
    expect(revalidatable(validators)).toBe(expected);
    const conditional = conditionalHeaders(validators);
    expect(conditional["if-none-match"]).toBe(headers.etag);
    expect(conditional["if-modified-since"]).toBe(headers["last-modified"]);
  });
});

describe("resumeHeaders", () => {
  const date = "Mon, 01 Jan 2024 00:00:00 GMT";
  it.each([
    ["nothing yet: a plain request", 0, {}, false, {}],
    [
      "a strong ETag ties the rest to its version",
      10,
      { etag: '"v1"' },
      false,
      { range: "bytes=10-", "if-range": '"v1"' },
    ],
    [
      "a weak ETag cannot: Last-Modified does",
      10,
      { etag: 'W/"v1"', lastModified: date },
      false,
      { range: "bytes=10-", "if-range": date },
    ],
    ["Last-Modified alone", 5, { lastModified: date }, false, { range: "bytes=5-", "if-range": date }],
    ["no validator, a digest to check the whole against", 5, {}, true, { range: "bytes=5-" }],
    ["a weak ETag alone and a digest", 5, { etag: 'W/"v1"' }, true, { range: "bytes=5-" }],
    ["no validator and no digest: start over", 5, {}, false, null],
    ["a weak ETag alone, no digest: start over", 5, { etag: 'W/"v1"' }, false, null],
  ])("%s", (_, offset, validators, digestKnown, expected) => {
    expect(resumeHeaders(offset, validators, digestKnown)).toStrictEqual(expected);
  });
});

describe("contentRangeStart", () => {
  it.each([
    ["bytes 10-99/100", 10],
    ["bytes 0-0/1", 0],
    ["bytes 10-99/*", 10],
    ["bytes */100", null],
    ["items 10-99/100", null],
    [null, null],
  ])("%s", (header, expected) => {
    expect(contentRangeStart(header)).toBe(expected);
  });
});

describe("parseUrlRecord", () => {
  const url = "https://h/data.bin";
  const name = urlRecordName(url);
  const held = (sha256: string) => sha256 === HEX;
  it.each([
    [
      "a record of its URL, with a validator, of an object held",
      name,
      { url, sha256: HEX, etag: '"v1"' },
      true,
    ],
    ["an object no longer held", name, { url, sha256: "f".repeat(64), etag: '"v1"' }, false],
    ["no validator", name, { url, sha256: HEX }, false],
    [
      "another URL's record under this name",
      name,
      { url: "https://h/other", sha256: HEX, etag: '"v1"' },
      false,
    ],
    ["a malformed digest", name, { url, sha256: "xyz", etag: '"v1"' }, false],
  ])("%s", (_, file, record, kept) => {
    const parsed = parseUrlRecord(file, JSON.stringify(record), held);
    expect(parsed).toStrictEqual(kept ? record : null);
  });

  it("unreadable text is no record", () => {
    expect(parseUrlRecord(name, "{", held)).toBeNull();
    expect(parseUrlRecord(name, "null", held)).toBeNull();
  });

  it("names a record by the SHA-256 of its URL", () => {
    expect(name).toMatch(/^[0-9a-f]{64}\.json$/);
    expect(urlRecordName("https://h/other")).not.toBe(name);
  });
});

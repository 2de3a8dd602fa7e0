// s3://bucket/key as tables: the bucket and key read from the text (percent-escapes decoded, no
// dot segment normalised away), and each malformed URL refused saying why.

import { describe, expect, it } from "vitest";
import { isS3Url, parseS3Url, s3ObjectOf, s3UrlProblem } from "../../../../src/common/model/s3-url.ts";

describe("parseS3Url reads", () => {
  it.each([
    ["s3://bucket/key", "bucket", "key"],
    ["S3://bucket/Key", "bucket", "Key"],
    ["s3://my.bucket-1/dir/sub/file.nc", "my.bucket-1", "dir/sub/file.nc"],
    ["s3://Legacy_Bucket/k", "Legacy_Bucket", "k"],
    ["s3://b12/a%20b+c", "b12", "a b+c"],
    ["s3://b12/a%2Fb", "b12", "a/b"],
    ["s3://b12/a b", "b12", "a b"],
    ["s3://b12//double", "b12", "/double"],
    ["s3://b12/dir/", "b12", "dir/"],
    ["s3://b12/%E2%82%AC", "b12", "€"],
    ["s3://b12/.hidden/x..y", "b12", ".hidden/x..y"],
  ])("%s", (url, bucket, key) => {
    expect(parseS3Url(url)).toStrictEqual({ bucket, key });
    expect(s3UrlProblem(url)).toBeNull();
    expect(s3ObjectOf(url)).toStrictEqual({ bucket, key });
  });
});

describe("parseS3Url refuses", () => {
  it.each([
    ["another scheme", "https://b/k", "is not an s3://bucket/key URL"],
    ["no slashes", "s3:bucket/key", "is not an s3://bucket/key URL"],
    ["no bucket", "s3:///key", "names no bucket"],
    ["no key", "s3://bucket", "names no key: s3://bucket/key"],
    ["an empty key", "s3://bucket/", "names no key: s3://bucket/key"],
    [
      "a query",
      "s3://bucket/k?versionId=3",
      "has a query or a fragment: an s3: URL names the bucket and key only",
    ],
    ["a fragment", "s3://bucket/k#x", "has a query or a fragment: an s3: URL names the bucket and key only"],
    [
      "credentials",
      "s3://key:secret@bucket/k",
      "holds credentials: an s3: URL names the bucket and key only (credentials come from the agent or a secret)",
    ],
    [
      "a port",
      "s3://bucket:9000/k",
      "has a port: an s3: URL names the bucket and key only (the endpoint is the agent's)",
    ],
    [
      "a bucket too short",
      "s3://ab/k",
      'bucket "ab" is not a bucket name (3 to 255 letters, digits, dots, hyphens, underscores)',
    ],
    [
      "a bucket ending in a hyphen",
      "s3://abc-/k",
      'bucket "abc-" is not a bucket name (3 to 255 letters, digits, dots, hyphens, underscores)',
    ],
    ["a malformed escape", "s3://bucket/%E2%8", "has a malformed percent-escape in its key"],
    ["a dot segment", "s3://bucket/a/./b", "its key has a . or .. segment, which no HTTP request can name"],
    [
      "a dot-dot segment",
      "s3://bucket/a/../b",
      "its key has a . or .. segment, which no HTTP request can name",
    ],
    [
      "an escaped dot-dot",
      "s3://bucket/%2E%2E/b",
      "its key has a . or .. segment, which no HTTP request can name",
    ],
    ["a control character", "s3://bucket/a%0Ab", "its key holds a control character"],
  ])("%s", (_, url, problem) => {
    expect(parseS3Url(url)).toBe(problem);
    expect(s3UrlProblem(url)).toBe(problem);
    expect(() => s3ObjectOf(url)).toThrow(`${url} ${problem}`);
  });

  it("a key longer than 1024 bytes", () => {
    expect(s3UrlProblem(`s3://bucket/${"€".repeat(342)}`)).toBe("its key is longer than 1024 bytes");
    expect(s3UrlProblem(`s3://bucket/${"x".repeat(1024)}`)).toBeNull();
  });
});

describe("isS3Url", () => {
  it.each([
    ["s3://b/k", true],
    ["S3://b/k", true],
    ["s3:x", true],
    ["https://b/k", false],
    ["s", false],
  ])("%s", (url, yes) => {
    expect(isS3Url(url)).toBe(yes);
  });
});

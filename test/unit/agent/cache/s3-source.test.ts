// An s3: input's source, without a network: a malformed endpoint or region fails at once (not after
// every try), and a refused answer is named by its S3 error code, its body read no further than a
// bound and never more of it.

import { describe, expect, it } from "vitest";
import { ERROR_BODY_MAX_BYTES, s3Refusal, s3Source } from "../../../../src/agent/cache/s3-source.ts";

describe("s3Source", () => {
  it.each([
    [
      { region: "us-east-1", endpoint: "ftp://store" },
      's3://bkt/k: the S3 endpoint "ftp://store" is not an http: or https: URL',
    ],
    [{ region: "us east", endpoint: null }, 's3://bkt/k: the S3 region "us east" is not a region name'],
  ])("refuses settings it cannot address: %j", (settings, message) => {
    expect(() => s3Source("s3://bkt/k", { credentials: null, ...settings })).toThrow(message);
  });

  it("refuses a URL that names no object", () => {
    expect(() => s3Source("s3://bkt", { credentials: null, region: "us-east-1", endpoint: null })).toThrow(
      "s3://bkt names no key: s3://bucket/key",
    );
  });

  it("is named by its s3: URL", () => {
    const source = s3Source("s3://bkt/a/b", {
      credentials: { accessKeyId: "AKIA", secretAccessKey: "hidden" },
      region: "us-east-1",
      endpoint: "http://127.0.0.1:9",
    });
    expect(source.name).toBe("s3://bkt/a/b");
  });
});

describe("s3Refusal", () => {
  it("reads the code of an error document", async () => {
    const body = "<Error><Code>NoSuchKey</Code><Message>gone</Message></Error>";
    expect(await s3Refusal(new Response(body, { status: 404 }))).toBe("NoSuchKey");
  });

  it("reads no further than its bound", async () => {
    const late = `${" ".repeat(ERROR_BODY_MAX_BYTES)}<Code>TooLate</Code>`;
    expect(await s3Refusal(new Response(late, { status: 500 }))).toBeNull();
  });

  it("an answer without a body, or not a document, says nothing", async () => {
    expect(await s3Refusal(new Response(null, { status: 403 }))).toBeNull();
    expect(await s3Refusal(new Response("<html>502</html>", { status: 502 }))).toBeNull();
  });
});

// One S3 request signed with AWS Signature V4, the clock handed in: checked against the signature
// computed here by the steps of the specification (canonical request, string to sign, signing key),
// so that a change to what is signed shows; unsigned without credentials; the session token sent;
// and an error document's code read, never more of it.

import { createHash, createHmac } from "node:crypto";
import { describe, expect, it } from "vitest";
import type { S3Settings } from "../../../../src/agent/s3/s3-settings.ts";
import {
  amzDate,
  EMPTY_PAYLOAD_SHA256,
  s3ErrorCode,
  s3Request,
} from "../../../../src/agent/s3/s3-signing.ts";

const NOW = new Date("2026-03-04T05:06:07.890Z");
const hmac = (key: Buffer | string, text: string) => createHmac("sha256", key).update(text).digest();

/** The signature the specification gives for a request whose headers are all signed. */
function expectedSignature(
  method: string,
  path: string,
  headers: Record<string, string>,
  secret: string,
  region: string,
): string {
  const names = Object.keys(headers).sort();
  const canonical = [
    method,
    path,
    "",
    ...names.map((name) => `${name}:${headers[name]}`),
    "",
    names.join(";"),
    headers["x-amz-content-sha256"],
  ].join("\n");
  const scope = `20260304/${region}/s3/aws4_request`;
  const toSign = [
    "AWS4-HMAC-SHA256",
    "20260304T050607Z",
    scope,
    createHash("sha256").update(canonical).digest("hex"),
  ].join("\n");
  const key = hmac(hmac(hmac(hmac(`AWS4${secret}`, "20260304"), region), "s3"), "aws4_request");
  return createHmac("sha256", key).update(toSign).digest("hex");
}

describe("s3Request", () => {
  const settings: S3Settings = {
    credentials: { accessKeyId: "AKIDEXAMPLE", secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY" },
    region: "eu-west-3",
    endpoint: "http://127.0.0.1:9000",
  };

  it("signs a GET with its headers, as the specification computes it", () => {
    const request = s3Request(
      "GET",
      { bucket: "climate", key: "a b/grid.nc" },
      settings,
      { Range: "bytes=5-", "If-Range": '"e"' },
      NOW,
    );
    expect(request.url.toString()).toBe("http://127.0.0.1:9000/climate/a%20b/grid.nc");
    const signed = {
      host: "127.0.0.1:9000",
      "if-range": '"e"',
      "x-amz-content-sha256": EMPTY_PAYLOAD_SHA256,
      "x-amz-date": "20260304T050607Z",
    };
    const { host: _fromTheUrl, ...sent } = signed;
    expect(request.headers).toMatchObject({ ...sent, range: "bytes=5-" });
    expect(request.headers.host).toBeUndefined();
    expect(request.headers.authorization).toBe(
      `AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20260304/eu-west-3/s3/aws4_request, SignedHeaders=host;if-range;x-amz-content-sha256;x-amz-date, Signature=${expectedSignature(
        "GET",
        "/climate/a%20b/grid.nc",
        signed,
        "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        "eu-west-3",
      )}`,
    );
  });

  it("signs a PUT's payload digest, and sends the session token signed", () => {
    const digest = "a".repeat(64);
    const request = s3Request(
      "PUT",
      { bucket: "out", key: "k" },
      { ...settings, credentials: { ...settings.credentials!, sessionToken: "TOKEN" } },
      { "content-type": "application/octet-stream" },
      NOW,
      digest,
    );
    expect(request.headers["x-amz-content-sha256"]).toBe(digest);
    expect(request.headers["x-amz-security-token"]).toBe("TOKEN");
    expect(request.headers.authorization).toContain(
      "SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-security-token,",
    );
  });

  it("a PUT without a digest signs UNSIGNED-PAYLOAD", () => {
    const request = s3Request("PUT", { bucket: "out", key: "k" }, settings, {}, NOW);
    expect(request.headers["x-amz-content-sha256"]).toBe("UNSIGNED-PAYLOAD");
  });

  it("leaves a request without credentials unsigned, its headers as given", () => {
    const request = s3Request(
      "GET",
      { bucket: "public", key: "k" },
      { ...settings, credentials: null },
      { Range: "bytes=1-" },
      NOW,
    );
    expect(request.headers).toStrictEqual({ range: "bytes=1-" });
  });

  it("carries the secret nowhere", () => {
    const request = s3Request("GET", { bucket: "climate", key: "k" }, settings, {}, NOW);
    expect(JSON.stringify(request)).not.toContain(settings.credentials!.secretAccessKey);
  });

  it("amzDate", () => {
    expect(amzDate(NOW)).toBe("20260304T050607Z");
  });
});

describe("s3ErrorCode", () => {
  it.each<[string, string | null]>([
    ['<?xml version="1.0"?><Error><Code>NoSuchBucket</Code><Message>x</Message></Error>', "NoSuchBucket"],
    [
      "<Error><Code>SignatureDoesNotMatch</Code><StringToSign>secret-ish</StringToSign></Error>",
      "SignatureDoesNotMatch",
    ],
    ["<Error><Code>Not a <b>code</b></Code></Error>", null],
    ["<html>Bad gateway</html>", null],
    ["", null],
  ])("%s", (body, code) => {
    expect(s3ErrorCode(body)).toBe(code);
  });
});

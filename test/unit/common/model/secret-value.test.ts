// What a secret holds: the key pair required, the session token, region and endpoint optional,
// nothing else; and the fields `--from-env` takes from AWS_* variables.

import { describe, expect, it } from "vitest";
import { parseSecretValue, secretValueFromEnvironment } from "../../../../src/common/model/secret-value.ts";

describe("parseSecretValue", () => {
  it.each<[string, unknown, string | null]>([
    ["the pair alone", { accessKeyId: "AK", secretAccessKey: "sk" }, null],
    [
      "every field",
      {
        accessKeyId: "AK",
        secretAccessKey: "sk",
        sessionToken: "t",
        region: "eu-west-1",
        endpoint: "http://h:9000",
      },
      null,
    ],
    [
      "no secret key",
      { accessKeyId: "AK" },
      "secretAccessKey: Invalid input: expected string, received undefined",
    ],
    [
      "an empty key id",
      { accessKeyId: "", secretAccessKey: "sk" },
      "accessKeyId: Too small: expected string to have >=1 characters",
    ],
    [
      "a field not known",
      { accessKeyId: "AK", secretAccessKey: "sk", password: "x" },
      'the value: Unrecognized key: "password"',
    ],
    [
      "a number",
      { accessKeyId: 7, secretAccessKey: "sk" },
      "accessKeyId: Invalid input: expected string, received number",
    ],
    ["not an object", "AK:sk", "the value: Invalid input: expected object, received string"],
    [
      "a field too long",
      { accessKeyId: "AK", secretAccessKey: "s".repeat(8193) },
      "secretAccessKey: Too big: expected string to have <=8192 characters",
    ],
  ])("%s", (_, value, problem) => {
    const parsed = parseSecretValue(value);
    if (problem === null) expect(parsed).toStrictEqual({ value });
    else expect(parsed).toStrictEqual({ problem });
  });

  it("never quotes a value in its problem", () => {
    const parsed = parseSecretValue({
      accessKeyId: "AKIAVISIBLE",
      secretAccessKey: 12345,
      extra: "hidden-value",
    });
    expect(JSON.stringify(parsed)).not.toMatch(/AKIAVISIBLE|12345|hidden-value/);
  });
});

describe("secretValueFromEnvironment", () => {
  it.each<[string, Record<string, string>, Record<string, string>]>([
    ["nothing set", {}, {}],
    [
      "every variable, the first of each field's",
      {
        AWS_ACCESS_KEY_ID: "AK",
        AWS_SECRET_ACCESS_KEY: "sk",
        AWS_SESSION_TOKEN: "t",
        AWS_REGION: "eu-west-1",
        AWS_DEFAULT_REGION: "us-west-2",
        AWS_ENDPOINT_URL_S3: "http://s3:9000",
        AWS_ENDPOINT_URL: "http://other:9000",
      },
      {
        accessKeyId: "AK",
        secretAccessKey: "sk",
        sessionToken: "t",
        region: "eu-west-1",
        endpoint: "http://s3:9000",
      },
    ],
    [
      "the second variable when the first is empty or absent",
      { AWS_REGION: "", AWS_DEFAULT_REGION: "us-west-2", AWS_ENDPOINT_URL: "http://other:9000" },
      { region: "us-west-2", endpoint: "http://other:9000" },
    ],
    ["an empty variable is absent", { AWS_ACCESS_KEY_ID: "" }, {}],
  ])("%s", (_, env, value) => {
    expect(secretValueFromEnvironment(env)).toStrictEqual(value);
  });
});

// The AWS shared files as tables: sections and keys read as the AWS CLI reads them, a profile's
// values from the credentials file first and the config file for the rest, a secret's text.

import { describe, expect, it } from "vitest";
import { awsValuesOf, parseIni, profileValues, secretValues } from "../../../../src/agent/s3/aws-config.ts";

describe("parseIni", () => {
  it("reads sections, keys lower-cased, values trimmed, comments and nested blocks left out", () => {
    const text = [
      "# a comment",
      "orphan = before any section",
      "[default]",
      "AWS_Access_Key_ID = AKIA1",
      "aws_secret_access_key=s/e+c=r=et",
      "; another comment",
      "",
      "[profile  work ]",
      "region = eu-west-3",
      "s3 =",
      "  endpoint_url = http://nested.example",
      "endpoint_url = http://127.0.0.1:9000",
      "not a key",
      "[default]",
      "region = us-west-2",
    ].join("\r\n");
    const sections = parseIni(text);
    expect([...sections.keys()]).toStrictEqual(["default", "profile work"]);
    expect(Object.fromEntries(sections.get("default") ?? [])).toStrictEqual({
      aws_access_key_id: "AKIA1",
      aws_secret_access_key: "s/e+c=r=et",
      region: "us-west-2",
    });
    expect(Object.fromEntries(sections.get("profile work") ?? [])).toStrictEqual({
      region: "eu-west-3",
      s3: "",
      endpoint_url: "http://127.0.0.1:9000",
    });
  });
});

describe("awsValuesOf", () => {
  it("takes the five keys an S3 request needs, empty ones left out", () => {
    const section = new Map([
      ["aws_access_key_id", "AKIA1"],
      ["aws_secret_access_key", "secret"],
      ["aws_session_token", "token"],
      ["region", "eu-west-1"],
      ["endpoint_url", "http://e"],
      ["output", "json"],
    ]);
    expect(awsValuesOf(section)).toStrictEqual({
      accessKeyId: "AKIA1",
      secretAccessKey: "secret",
      sessionToken: "token",
      region: "eu-west-1",
      endpoint: "http://e",
    });
    expect(awsValuesOf(new Map([["region", ""]]))).toStrictEqual({});
    expect(awsValuesOf(undefined)).toStrictEqual({});
  });
});

describe("profileValues", () => {
  const credentials =
    "[default]\naws_access_key_id = D\naws_secret_access_key = DS\n[work]\naws_access_key_id = W\naws_secret_access_key = WS\nregion = from-credentials\n";
  const config =
    "[default]\nregion = eu-west-1\n[profile work]\nregion = from-config\nendpoint_url = http://e\naws_access_key_id = CONFIG\n[work]\nregion = not-a-config-section\n";
  it.each<[string, string | null, string | null, string, Record<string, string>]>([
    [
      "default from both",
      credentials,
      config,
      "default",
      { accessKeyId: "D", secretAccessKey: "DS", region: "eu-west-1" },
    ],
    [
      "a named profile: the credentials file wins, the config's [profile NAME] fills in",
      credentials,
      config,
      "work",
      { accessKeyId: "W", secretAccessKey: "WS", region: "from-credentials", endpoint: "http://e" },
    ],
    ["a profile neither has", credentials, config, "other", {}],
    ["no files", null, null, "default", {}],
    [
      "the config file alone",
      null,
      config,
      "work",
      { region: "from-config", endpoint: "http://e", accessKeyId: "CONFIG" },
    ],
  ])("%s", (_, credentialsText, configText, profile, values) => {
    expect(profileValues(credentialsText, configText, profile)).toStrictEqual(values);
  });
});

describe("secretValues", () => {
  it.each<[string, string, Record<string, string>]>([
    [
      "bare keys",
      "aws_access_key_id = A\naws_secret_access_key = S\n",
      { accessKeyId: "A", secretAccessKey: "S" },
    ],
    [
      "a [default] section",
      "[default]\naws_access_key_id = A\naws_secret_access_key = S\nregion = r\nendpoint_url = http://e\naws_session_token = T",
      { accessKeyId: "A", secretAccessKey: "S", region: "r", endpoint: "http://e", sessionToken: "T" },
    ],
    [
      "bare keys win over [default]",
      "region = top\n[default]\nregion = below\naws_access_key_id = A",
      { region: "top", accessKeyId: "A" },
    ],
    ["another section alone is not read", "[work]\naws_access_key_id = A", {}],
  ])("%s", (_, text, values) => {
    expect(secretValues(text)).toStrictEqual(values);
  });
});

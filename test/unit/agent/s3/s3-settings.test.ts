// Where an S3 request goes and with what credentials, as tables: the order of the sources (a job's
// secret, the agent's environment, its profile), each setting from the first that has it, and the
// object's address (path-style under a custom endpoint, virtual-hosted on AWS, path-style there
// for a bucket that cannot be a host name).

import { describe, expect, it } from "vitest";
import { profileValues } from "../../../../src/agent/s3/aws-config.ts";
import {
  DEFAULT_REGION,
  encodedKey,
  environmentValues,
  objectUrl,
  resolveS3Settings,
  virtualHostable,
} from "../../../../src/agent/s3/s3-settings.ts";

describe("environmentValues", () => {
  it.each<[string, Record<string, string>, Record<string, string>]>([
    ["none", {}, {}],
    [
      "every variable",
      {
        AWS_ACCESS_KEY_ID: "A",
        AWS_SECRET_ACCESS_KEY: "S",
        AWS_SESSION_TOKEN: "T",
        AWS_REGION: "eu-west-3",
        AWS_ENDPOINT_URL_S3: "http://s3only",
      },
      {
        accessKeyId: "A",
        secretAccessKey: "S",
        sessionToken: "T",
        region: "eu-west-3",
        endpoint: "http://s3only",
      },
    ],
    ["AWS_REGION before AWS_DEFAULT_REGION", { AWS_REGION: "a", AWS_DEFAULT_REGION: "b" }, { region: "a" }],
    ["AWS_DEFAULT_REGION alone", { AWS_DEFAULT_REGION: "b" }, { region: "b" }],
    [
      "the S3 endpoint before the general one",
      { AWS_ENDPOINT_URL_S3: "http://a", AWS_ENDPOINT_URL: "http://b" },
      { endpoint: "http://a" },
    ],
    ["the general endpoint alone", { AWS_ENDPOINT_URL: "http://b" }, { endpoint: "http://b" }],
    [
      "an empty variable is none",
      { AWS_REGION: "", AWS_DEFAULT_REGION: "b", AWS_ACCESS_KEY_ID: "" },
      { region: "b" },
    ],
  ])("%s", (_, env, values) => {
    expect(environmentValues(env)).toStrictEqual(values);
  });
});

describe("resolveS3Settings: each setting from the first source that has it", () => {
  const secret = { accessKeyId: "SEC", secretAccessKey: "SECS" };
  const env = environmentValues({
    AWS_ACCESS_KEY_ID: "ENV",
    AWS_SECRET_ACCESS_KEY: "ENVS",
    AWS_REGION: "env-region",
  });
  const profile = profileValues(
    "[p]\naws_access_key_id = PRO\naws_secret_access_key = PROS\naws_session_token = PROT\n",
    "[profile p]\nregion = pro-region\nendpoint_url = http://pro\n",
    "p",
  );
  it.each<[string, Parameters<typeof resolveS3Settings>[0], ReturnType<typeof resolveS3Settings>]>([
    [
      "nothing anywhere: unsigned, us-east-1, AWS",
      [],
      { credentials: null, region: DEFAULT_REGION, endpoint: null },
    ],
    [
      "the secret's pair first, region and endpoint from the others",
      [secret, env, profile],
      {
        credentials: { accessKeyId: "SEC", secretAccessKey: "SECS" },
        region: "env-region",
        endpoint: "http://pro",
      },
    ],
    [
      "the environment's pair before the profile's",
      [{}, env, profile],
      {
        credentials: { accessKeyId: "ENV", secretAccessKey: "ENVS" },
        region: "env-region",
        endpoint: "http://pro",
      },
    ],
    [
      "the profile's pair with its own session token",
      [{}, { region: "r" }, profile],
      {
        credentials: { accessKeyId: "PRO", secretAccessKey: "PROS", sessionToken: "PROT" },
        region: "r",
        endpoint: "http://pro",
      },
    ],
    [
      "half a pair is no pair: the next source's whole one",
      [{ accessKeyId: "HALF", sessionToken: "STRAY" }, profile],
      {
        credentials: { accessKeyId: "PRO", secretAccessKey: "PROS", sessionToken: "PROT" },
        region: "pro-region",
        endpoint: "http://pro",
      },
    ],
    [
      "a session token of another source is not taken",
      [{ accessKeyId: "A", secretAccessKey: "S" }, { sessionToken: "OTHER" }],
      { credentials: { accessKeyId: "A", secretAccessKey: "S" }, region: DEFAULT_REGION, endpoint: null },
    ],
    [
      "a secret's region and endpoint win",
      [{ region: "sec-region", endpoint: "http://sec" }, env, profile],
      {
        credentials: { accessKeyId: "ENV", secretAccessKey: "ENVS" },
        region: "sec-region",
        endpoint: "http://sec",
      },
    ],
  ])("%s", (_, sources, settings) => {
    expect(resolveS3Settings(sources)).toStrictEqual(settings);
  });
});

describe("objectUrl", () => {
  it.each<[string, string, string, string, string | null, string]>([
    [
      "virtual-hosted on AWS",
      "climate",
      "runs/grid.nc",
      "eu-west-3",
      null,
      "https://climate.s3.eu-west-3.amazonaws.com/runs/grid.nc",
    ],
    [
      "path-style on AWS for a dotted bucket",
      "my.data",
      "k",
      "us-east-1",
      null,
      "https://s3.us-east-1.amazonaws.com/my.data/k",
    ],
    [
      "path-style on AWS for a legacy bucket",
      "Old_Bucket",
      "k",
      "us-east-1",
      null,
      "https://s3.us-east-1.amazonaws.com/Old_Bucket/k",
    ],
    [
      "path-style under an endpoint",
      "climate",
      "runs/grid.nc",
      "us-east-1",
      "http://127.0.0.1:9000",
      "http://127.0.0.1:9000/climate/runs/grid.nc",
    ],
    [
      "an endpoint's trailing slash",
      "climate",
      "k",
      "us-east-1",
      "http://127.0.0.1:9000/",
      "http://127.0.0.1:9000/climate/k",
    ],
    [
      "an endpoint's own path",
      "climate",
      "k",
      "us-east-1",
      "https://store.example/s3/",
      "https://store.example/s3/climate/k",
    ],
    [
      "a key's odd characters encoded",
      "climate",
      "a b+c/(x)!*'€",
      "us-east-1",
      "http://e",
      "http://e/climate/a%20b%2Bc/%28x%29%21%2A%27%E2%82%AC",
    ],
    [
      "a key's slashes kept, its empty segments too",
      "climate",
      "/a//b/",
      "us-east-1",
      "http://e",
      "http://e/climate//a//b/",
    ],
  ])("%s", (_, bucket, key, region, endpoint, url) => {
    expect(objectUrl({ bucket, key }, { region, endpoint }).toString()).toBe(url);
  });

  it.each<[string, string, string | null, string]>([
    [
      "an endpoint of another scheme",
      "us-east-1",
      "ftp://e",
      'the S3 endpoint "ftp://e" is not an http: or https: URL',
    ],
    [
      "an endpoint that is no URL",
      "us-east-1",
      "127.0.0.1:9000",
      'the S3 endpoint "127.0.0.1:9000" is not an http: or https: URL',
    ],
    ["a region that is no name", "eu west", null, 'the S3 region "eu west" is not a region name'],
  ])("refuses %s", (_, region, endpoint, message) => {
    expect(() => objectUrl({ bucket: "climate", key: "k" }, { region, endpoint })).toThrow(message);
  });

  it.each([
    ["climate", true],
    ["a-b-c", true],
    ["my.data", false],
    ["Old", false],
    ["ab", false],
    ["-ab", false],
    ["ab-", false],
    ["a_b", false],
    ["x".repeat(63), true],
    ["x".repeat(64), false],
  ])("virtualHostable(%s) is %s", (bucket, yes) => {
    expect(virtualHostable(bucket)).toBe(yes);
  });

  it("encodedKey keeps unreserved characters", () => {
    expect(encodedKey("A-Z_a.z~0/9")).toBe("A-Z_a.z~0/9");
  });
});

// The S3 settings of an attempt's transfers: one naming a secret signs with its pair alone (the
// agent's lends a region and an endpoint only), one naming none with the agent's own, one naming
// a secret the start does not hold fails naming it; each resolved once, the agent's sources read
// at the first need only.

import { describe, expect, it } from "vitest";
import { attemptS3Settings } from "../../../../src/agent/s3/attempt-s3-settings.ts";
import type { AwsValues } from "../../../../src/agent/s3/aws-config.ts";
import type { SecretValue } from "../../../../src/common/model/secret-value.ts";

const AGENT: AwsValues[] = [
  { accessKeyId: "AKIAAGENT", secretAccessKey: "agent-secret", sessionToken: "agent-token" },
  { region: "eu-central-1", endpoint: "http://agent-endpoint:9000" },
];

describe("attemptS3Settings", () => {
  it.each<[string, Record<string, SecretValue> | undefined, string | undefined, unknown]>([
    [
      "no credentials named: the agent's own",
      undefined,
      undefined,
      {
        credentials: {
          accessKeyId: "AKIAAGENT",
          secretAccessKey: "agent-secret",
          sessionToken: "agent-token",
        },
        region: "eu-central-1",
        endpoint: "http://agent-endpoint:9000",
      },
    ],
    [
      "a secret's pair, never the agent's session token; the agent's region and endpoint",
      { read: { accessKeyId: "AKIAJOB", secretAccessKey: "job-secret" } },
      "read",
      {
        credentials: { accessKeyId: "AKIAJOB", secretAccessKey: "job-secret" },
        region: "eu-central-1",
        endpoint: "http://agent-endpoint:9000",
      },
    ],
    [
      "a secret's own session token, region and endpoint first",
      {
        read: {
          accessKeyId: "AKIAJOB",
          secretAccessKey: "job-secret",
          sessionToken: "job-token",
          region: "ap-south-1",
          endpoint: "http://job-endpoint:9000",
        },
      },
      "read",
      {
        credentials: { accessKeyId: "AKIAJOB", secretAccessKey: "job-secret", sessionToken: "job-token" },
        region: "ap-south-1",
        endpoint: "http://job-endpoint:9000",
      },
    ],
  ])("%s", (_, secrets, credentials, settings) => {
    expect(attemptS3Settings(secrets, () => AGENT)(credentials)).toStrictEqual(settings);
  });

  it("fails a transfer naming a secret the start does not hold, naming it; never signs it as the agent", () => {
    for (const secrets of [undefined, { other: { accessKeyId: "A", secretAccessKey: "s" } }])
      expect(() => attemptS3Settings(secrets, () => AGENT)("read")).toThrow(
        "the secret read (credentials) is not in the attempt's start: it was removed, or the agent restarted",
      );
    // A name that is a property of every object is no secret either.
    expect(() => attemptS3Settings({}, () => AGENT)("constructor")).toThrow("the secret constructor");
  });

  it("reads the agent's sources once, at the first need", () => {
    let reads = 0;
    const settings = attemptS3Settings({ read: { accessKeyId: "A", secretAccessKey: "s" } }, () => {
      reads++;
      return AGENT;
    });
    expect(reads).toBe(0);
    settings("read");
    settings();
    settings("read");
    settings();
    expect(reads).toBe(1);
  });
});

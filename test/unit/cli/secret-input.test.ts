// The value `steward secret set` sends: standard input's JSON object, or the caller's AWS_*
// variables, checked before anything is sent; a problem exits 2 and never echoes the value.

import { describe, expect, it } from "vitest";
import { secretValueOfEnvironment, secretValueOfText } from "../../../src/cli/secret-input.ts";
import { CliError } from "../../../src/common/command-line/cli-error.ts";

/** What `read` throws: its message and exit code; null when it answers. */
function failure(read: () => unknown): { message: string; exitCode: number } | null {
  try {
    read();
    return null;
  } catch (error) {
    expect(error).toBeInstanceOf(CliError);
    return { message: (error as CliError).message, exitCode: (error as CliError).exitCode };
  }
}

describe("secretValueOfText", () => {
  it("takes a JSON object of the fields", () => {
    expect(
      secretValueOfText('{"accessKeyId":"AK","secretAccessKey":"sk","region":"eu-west-1"}\n'),
    ).toStrictEqual({
      accessKeyId: "AK",
      secretAccessKey: "sk",
      region: "eu-west-1",
    });
  });

  it.each<[string, string, string]>([
    ["not JSON", "AK sk-hidden", "standard input is not JSON"],
    ["a field missing", '{"accessKeyId":"AK-hidden"}', "standard input: secretAccessKey:"],
    [
      "a field not known",
      '{"accessKeyId":"AK","secretAccessKey":"sk-hidden","pass":"x"}',
      'Unrecognized key: "pass"',
    ],
  ])("refuses %s with exit 2, without the value", (_, text, message) => {
    const failed = failure(() => secretValueOfText(text));
    expect(failed?.exitCode).toBe(2);
    expect(failed?.message).toContain(message);
    expect(failed?.message).not.toContain("hidden");
  });
});

describe("secretValueOfEnvironment", () => {
  it("takes the AWS variables", () => {
    expect(
      secretValueOfEnvironment({
        AWS_ACCESS_KEY_ID: "AK",
        AWS_SECRET_ACCESS_KEY: "sk",
        AWS_SESSION_TOKEN: "t",
        HOME: "/h",
      }),
    ).toStrictEqual({ accessKeyId: "AK", secretAccessKey: "sk", sessionToken: "t" });
  });

  it("refuses an environment without the pair, with exit 2", () => {
    expect(failure(() => secretValueOfEnvironment({ AWS_ACCESS_KEY_ID: "AK" }))).toStrictEqual({
      message: "--from-env needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY set",
      exitCode: 2,
    });
  });
});

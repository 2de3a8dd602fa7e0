// What a job needs its host's agent to move itself, from its inputs and outputs, and what a host
// whose agent does some of it lacks.

import { describe, expect, it } from "vitest";
import {
  AGENT_TRANSFERS,
  missingTransfer,
  S3_CREDENTIALS,
  S3_INPUTS,
  transfersNeeded,
  URL_INPUTS,
  URL_OUTPUTS,
} from "../../../../src/common/model/transfers.ts";

describe("transfersNeeded", () => {
  it.each<
    [
      string,
      (string | { url: string; credentials?: string })[],
      (string | { path: string; to: string; credentials?: string })[],
      string[],
    ]
  >([
    ["paths alone", ["a"], ["b"], []],
    ["an http input", [{ url: "https://h/x" }], [], ["url-inputs"]],
    [
      "an http input beside an s3: input",
      [{ url: "s3://bkt/x" }, { url: "http://h/x" }],
      [],
      ["url-inputs", "s3-inputs"],
    ],
    ["an s3: input", ["a", { url: "s3://bkt/x" }], [], ["s3-inputs"]],
    ["an S3: input in capitals", [{ url: "S3://bkt/x" }], [], ["s3-inputs"]],
    ["an output pushed to https", [], ["a", { path: "b", to: "https://h/b" }], ["url-outputs"]],
    ["an output pushed to s3", [], [{ path: "b", to: "s3://bkt/b" }], ["url-outputs"]],
    [
      "both, in order",
      [{ url: "s3://bkt/x" }],
      [{ path: "b", to: "s3://bkt/b" }],
      ["s3-inputs", "url-outputs"],
    ],
    [
      "an s3: input with credentials",
      [{ url: "s3://bkt/x", credentials: "k" }],
      [],
      ["s3-inputs", "s3-credentials"],
    ],
    [
      "an s3: output with credentials",
      [{ url: "s3://bkt/x" }],
      [{ path: "b", to: "s3://bkt/b", credentials: "k" }],
      ["s3-inputs", "url-outputs", "s3-credentials"],
    ],
  ])("%s", (_, inputs, outputs, needed) => {
    expect(transfersNeeded(inputs, outputs)).toStrictEqual(needed);
  });
});

describe("missingTransfer", () => {
  it.each<[string[], string[] | undefined, string | null]>([
    [[], undefined, null],
    [[S3_INPUTS], undefined, S3_INPUTS],
    [[S3_INPUTS], [], S3_INPUTS],
    [[S3_INPUTS, URL_OUTPUTS], [S3_INPUTS], URL_OUTPUTS],
    [[S3_INPUTS, URL_OUTPUTS], [URL_OUTPUTS, S3_INPUTS], null],
  ])("%j on an agent doing %j", (needed, offered, missing) => {
    expect(missingTransfer(needed, offered)).toBe(missing);
  });

  it("the agent of this release does every one", () => {
    expect(AGENT_TRANSFERS).toStrictEqual([URL_INPUTS, S3_INPUTS, URL_OUTPUTS, S3_CREDENTIALS]);
    expect(
      missingTransfer(
        transfersNeeded([{ url: "s3://bkt/x", credentials: "k" }], [{ path: "b", to: "s3://bkt/b" }]),
        AGENT_TRANSFERS,
      ),
    ).toBeNull();
  });
});

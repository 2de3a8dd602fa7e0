// A job file's `credentials`: allowed on an s3: input or output only, a secret's name; every one
// of a job found with its field, and the first its submitter has no secret of.

import { describe, expect, it } from "vitest";
import {
  credentialNames,
  missingCredentials,
  namedCredentials,
} from "../../../../src/common/model/job-credentials.ts";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";

/** The message validateJobSpec throws, or null when the job file is valid. */
function refusal(spec: Record<string, unknown>): string | null {
  try {
    validateJobSpec(spec);
    return null;
  } catch (error) {
    return (error as Error).message;
  }
}

describe("the job file's credentials", () => {
  it.each<[string, Record<string, unknown>, string | null]>([
    ["on an s3: input", { inputs: [{ url: "s3://data/x", credentials: "read" }] }, null],
    ["on an s3: output", { outputs: [{ path: "o", to: "s3://data/o", credentials: "w.1_x-y" }] }, null],
    [
      "on an https: input",
      { inputs: [{ url: "https://h/x", credentials: "read" }] },
      "inputs[0].credentials: only an s3: URL takes credentials",
    ],
    [
      "on an http: output",
      { outputs: [{ path: "o", to: "http://h/o", credentials: "read" }] },
      "outputs[0].credentials: only an s3: URL takes credentials",
    ],
    [
      "not a secret's name",
      { inputs: [{ url: "s3://data/x", credentials: "no/slash" }] },
      "inputs[0].credentials: must be a secret's name: 1 to 64 letters, digits, '_', '.' and '-'",
    ],
  ])("%s", (_, fields, message) => {
    const problem = refusal({ command: "true", ...fields });
    if (message === null) expect(problem).toBeNull();
    else expect(problem).toContain(message);
  });

  it("are found with their fields, inputs first; the names each once", () => {
    const spec = {
      inputs: ["a", { url: "s3://data/x", credentials: "read" }, { url: "s3://data/y" }],
      outputs: [
        { path: "o", to: "s3://data/o", credentials: "write" },
        "p",
        { path: "q", to: "s3://d2/q", credentials: "read" },
      ],
    };
    expect(namedCredentials(spec)).toStrictEqual([
      { field: "inputs[1].credentials", name: "read" },
      { field: "outputs[0].credentials", name: "write" },
      { field: "outputs[2].credentials", name: "read" },
    ]);
    expect(credentialNames(spec)).toStrictEqual(["read", "write"]);
    expect(missingCredentials(spec, (name) => name === "read")).toStrictEqual({
      field: "outputs[0].credentials",
      name: "write",
      message: "you have no secret write (steward secret set write)",
    });
    expect(missingCredentials(spec, () => true)).toBeNull();
    expect(credentialNames({ inputs: ["a"], outputs: [] })).toStrictEqual([]);
  });
});

// The CLI's reading of a job file: one that names no inputs goes as its text (the server parses
// it), one with inputs is parsed here so that they can be checked and uploaded.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { loadJobFile, submissionBody } from "../../../src/cli/job-submission.ts";
import { cleanup, tempDir } from "../../helpers/steward.ts";

describe("CLI job file", () => {
  const dir = tempDir("steward-cli-job-file-");
  afterAll(() => cleanup(dir));

  it("sends a job file without inputs as its YAML text", async () => {
    const text = "command: [echo, hi]\narray: { count: 3 }\n";
    writeFileSync(join(dir, "plain.yaml"), text);
    const job = loadJobFile(join(dir, "plain.yaml"));
    expect(job.raw).toBeNull();
    expect(await submissionBody(job)).toStrictEqual({
      body: text,
      headers: { "content-type": "application/yaml" },
    });
  });

  it("parses a job file with inputs, checks them, and sends them as multipart", async () => {
    writeFileSync(join(dir, "data.txt"), "x");
    writeFileSync(join(dir, "with.yaml"), "command: cat data.txt\ninputs: [data.txt]\n");
    const job = loadJobFile(join(dir, "with.yaml"));
    expect(job.raw).toStrictEqual({ command: "cat data.txt", inputs: ["data.txt"] });
    const body = await submissionBody(job);
    expect(body.body).toBeInstanceOf(FormData);
    writeFileSync(join(dir, "missing.yaml"), "command: x\ninputs: [nope.txt]\n");
    expect(() => loadJobFile(join(dir, "missing.yaml"))).toThrow(/inputs\[0\]: nope.txt: no such file/);
  });
});

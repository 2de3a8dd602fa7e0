// The generated references under docs/ (job file, command line, OpenAPI document) are what
// scripts/gen-docs.ts makes of today's code: a change to the schema, a command or a route that was
// not followed by `npm run docs` fails here.

import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DOCS_FOLDER, generatedDocs } from "../../scripts/gen-docs.ts";

describe("the generated docs", async () => {
  const docs = await generatedDocs();

  it("cover the job file, the command line and the API", () => {
    expect(Object.keys(docs).sort()).toEqual(["cli.md", "job-file.md", "openapi.json"]);
  });

  for (const [name, generated] of Object.entries(docs)) {
    it(`docs/${name} is up to date`, () => {
      const file = join(DOCS_FOLDER, name);
      const committed = existsSync(file) ? readFileSync(file, "utf8") : null;
      if (committed !== generated)
        expect.fail(
          committed === null
            ? `docs/${name} is missing: run \`npm run docs\` and commit it`
            : `docs/${name} differs from what the code generates (line ${firstDifference(committed, generated)}): run \`npm run docs\` and commit it`,
        );
    });
  }

  it("list every key of the job file, nested ones too, and every command", () => {
    for (const key of [
      "retry.maxAttempts",
      "checkpoint.intervalSeconds",
      "array.count",
      "contract.graceSeconds",
      "resources.memoryMb",
    ])
      expect(docs["job-file.md"]).toContain(`| \`${key}\` |`);
    for (const command of ["submit", "logs", "completion", "token create"])
      expect(docs["cli.md"]).toContain(`# steward ${command}\n`);
    expect(JSON.parse(docs["openapi.json"]).paths["/api/v1/jobs"]).toBeDefined();
  });
});

function firstDifference(a: string, b: string): number {
  const left = a.split("\n");
  const right = b.split("\n");
  const index = left.findIndex((line, i) => line !== right[i]);
  return (index === -1 ? left.length : index) + 1;
}

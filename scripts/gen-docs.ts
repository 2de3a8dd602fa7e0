// npm run docs: writes the generated references under docs/ (the job file, the command line, the
// OpenAPI document) from the code they describe. test/unit/docs-fresh.test.ts fails when a committed
// one differs from what this generates.

import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { cliDoc } from "./docs/cli-doc.ts";
import { jobFileDoc } from "./docs/job-file-doc.ts";
import { openApiDoc } from "./docs/openapi-doc.ts";

export const DOCS_FOLDER = join(import.meta.dirname, "../docs");

/** Each generated file's name under docs/ and its text. */
export async function generatedDocs(): Promise<Record<string, string>> {
  return {
    "job-file.md": jobFileDoc(),
    "cli.md": await cliDoc(),
    "openapi.json": await openApiDoc(),
  };
}

if (import.meta.main) {
  for (const [name, text] of Object.entries(await generatedDocs())) {
    writeFileSync(join(DOCS_FOLDER, name), text);
    process.stdout.write(`docs/${name}\n`);
  }
}

// A stand-in `steward` for the completion tests: it answers `ps --json` (and `ps --workflows
// --json`) with the ids a test gives it, printed as the real command prints them (JSON with a
// two-space indent), so a test can hand the shells ids no real server makes.

import { chmodSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

/** Writes the stand-in under `folder`/bin, answering `jobs` and `workflows`; answers that bin folder. */
export function completionStandIn(
  folder: string,
  jobs: readonly string[],
  workflows: readonly string[],
): string {
  const bin = join(folder, "bin");
  mkdirSync(bin, { recursive: true });
  writeFileSync(
    join(folder, "jobs.json"),
    `${JSON.stringify(
      jobs.map((id) => ({ id })),
      null,
      2,
    )}\n`,
  );
  writeFileSync(
    join(folder, "workflows.json"),
    `${JSON.stringify(
      workflows.map((workflow) => ({ workflow })),
      null,
      2,
    )}\n`,
  );
  writeFileSync(
    join(bin, "steward"),
    `#!/bin/sh
case "$*" in
  *--workflows*) cat '${join(folder, "workflows.json")}' ;;
  *) cat '${join(folder, "jobs.json")}' ;;
esac
`,
  );
  chmodSync(join(bin, "steward"), 0o755);
  return bin;
}

/** Whether `id` has the shape of an id Steward makes: what completion may offer. */
export function hasIdShape(id: string): boolean {
  return /^[A-Za-z0-9._-]+$/.test(id) || /^flow-[1-9][0-9]*$/.test(id);
}

// describe() for the tests of the Toil batch system: with the python3 that imports Toil, else a
// skipped test saying why, or a failing one under CI (the tests need Debian's toil package).

import { execFileSync } from "node:child_process";
import { describe, test } from "vitest";
import { toilPython } from "./toil-python.ts";

const found = toilPython();

/** Why Toil cannot run the tests (`module` of Toil's besides), or null when it can. */
function toilMissing(module?: string): string | null {
  if (!("python" in found)) return found.missing;
  if (!module) return null;
  try {
    execFileSync(found.python, ["-c", `import ${module}`], { stdio: "ignore" });
    return null;
  } catch {
    return `${found.python} does not import ${module}`;
  }
}

/** `body` under describe(name), given the python3 that runs Toil (and imports `module`, if named). */
export function describeToil(name: string, body: (python: string) => void, module?: string): void {
  const missing = toilMissing(module);
  if (missing === null && "python" in found) describe(name, () => body(found.python));
  else if (process.env.CI)
    test(`${name}: Toil is installed`, () => {
      throw new Error(missing ?? "no Toil");
    });
  else test.skip(`${name}: ${missing}`, () => {});
}

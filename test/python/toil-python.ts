// Which python3 runs Debian's Toil: the tests of the Toil batch system and its benchmark ask alike.

import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

function importsToil(python: string): boolean {
  try {
    execFileSync(python, ["-c", "import toil.batchSystems.registry, toil.cwl.cwltoil"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

/** A python3 that imports Toil: python3 itself, else the interpreter of `toil-cwl-runner`. */
export function toilPython(): { python: string } | { missing: string } {
  if (importsToil("python3")) return { python: "python3" };
  try {
    const runner = execFileSync("sh", ["-c", "command -v toil-cwl-runner"], { encoding: "utf8" }).trim();
    const shebang = readFileSync(runner, "utf8").split("\n")[0];
    const python = shebang.startsWith("#!") ? shebang.slice(2).trim().split(/\s+/)[0] : "";
    if (python && importsToil(python)) return { python };
    return { missing: `${runner}'s interpreter (${python || "none"}) does not import toil` };
  } catch {
    return { missing: "no Toil: python3 does not import toil and toil-cwl-runner is not on the PATH" };
  }
}

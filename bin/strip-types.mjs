// Loaded with --import by bin/steward when Steward is installed under a node_modules folder (npm
// install -g): Node strips TypeScript types itself everywhere but there, so this hook does it for
// Steward's own sources (and only those), with the same function Node uses.
import { readFileSync } from "node:fs";
import { registerHooks, stripTypeScriptTypes } from "node:module";
import { fileURLToPath, pathToFileURL } from "node:url";

const sources = pathToFileURL(fileURLToPath(new URL("../src/", import.meta.url))).href;

registerHooks({
  load(url, context, nextLoad) {
    if (url.startsWith(sources) && url.endsWith(".ts")) {
      const source = stripTypeScriptTypes(readFileSync(fileURLToPath(url), "utf8"), { mode: "strip" });
      return { format: "module", source, shortCircuit: true };
    }
    return nextLoad(url, context);
  },
});

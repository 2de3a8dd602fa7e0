// A job file's text (YAML, or JSON, which is YAML) as data, before its schema is checked. Apart
// from the schema so that the CLI can read a job file without loading the schema's libraries.

import { parse as parseYaml } from "yaml";
import { JobFileError } from "./jobfile-error.ts";

export function parseJobFileText(text: string): unknown {
  try {
    return parseYaml(text);
  } catch (error) {
    throw new JobFileError("", `not valid YAML or JSON: ${(error as Error).message.split("\n")[0]}`);
  }
}

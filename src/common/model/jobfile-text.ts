// A job file's text (YAML, or JSON, which is YAML) as data, before its schema is checked. Apart
// from the schema so that the CLI can read a job file without loading the schema's libraries.

import { parse as parseYaml, YAMLParseError } from "yaml";
import { JobFileError } from "./jobfile-error.ts";

/** Parses the text; a syntax error is a JobFileError with the line and column the parser names. */
export function parseJobFileText(text: string): unknown {
  try {
    return parseYaml(text);
  } catch (error) {
    const { reason, place } = syntaxProblem(error as Error);
    throw new JobFileError("", `not valid YAML or JSON: ${reason}`, place);
  }
}

/**
 * The parser's message as one clause, its place apart: yaml's first line ends `at line 3, column 1:`
 * before a copy of the text with a caret, which the place given with the error replaces.
 */
function syntaxProblem(error: Error): { reason: string; place: { line: number; column: number } | null } {
  const first = error.message.split("\n")[0].replace(/ at line \d+, column \d+:?$/, "");
  // "Map keys must be unique" reads as a clause after the colon; an acronym ("JSON ...") stays.
  const reason = /^[A-Z][a-z]/.test(first) ? first.charAt(0).toLowerCase() + first.slice(1) : first;
  const at = error instanceof YAMLParseError ? error.linePos?.[0] : undefined;
  return { reason, place: at ? { line: at.line, column: at.col } : null };
}

// A file a daemon's flag names (--qos, --pools, --shares), read and parsed: a file that cannot be
// read, or that its parser refuses, stops the daemon with one line naming the flag and the file.

import { readFileSync } from "node:fs";
import { CliError } from "../common/command-line/cli-error.ts";

/**
 * The file's text, parsed. `Refused` is the error its parser throws for a bad file (its message names
 * the line and the key); any other error passes through.
 */
export function readFlagFile<T>(
  flag: string,
  path: string,
  parse: (text: string) => T,
  Refused: new (...args: never[]) => Error,
): T {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch (error) {
    throw new CliError(`${flag} ${path}: ${(error as Error).message}`);
  }
  try {
    return parse(text);
  } catch (error) {
    if (error instanceof Refused) throw new CliError(`${flag} ${path}: ${error.message}`);
    throw error;
  }
}

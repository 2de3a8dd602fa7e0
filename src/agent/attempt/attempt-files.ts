// The small files of an attempt folder the agent reads and writes whole: the stop request, and what
// the supervisor writes in one short write (pid, exit).

import { readFile, rename } from "node:fs/promises";
import { writeNewFile } from "../files/new-file.ts";

export async function writeAtomic(path: string, content: string): Promise<void> {
  writeNewFile(`${path}.tmp`, content);
  await rename(`${path}.tmp`, path);
}

/**
 * A file the supervisor wrote in one short write: whole once it ends in a newline, else not there
 * yet; blank in a kept folder (spare-folders.ts) until it is written.
 */
export async function readWhole(path: string): Promise<string | null> {
  const text = await readFile(path, "utf8").catch(() => null);
  return text?.endsWith("\n") && text.trim() !== "" ? text : null;
}

export async function readJson<T>(path: string): Promise<T | null> {
  try {
    return JSON.parse(await readFile(path, "utf8")) as T;
  } catch {
    return null;
  }
}

// The host credential an agent gets when it first joins: kept in its work folder, mode 0600,
// written whole (temporary file, then rename) so a crash never leaves half of one. The temporary
// file is a new one, never a link found at its name (new-file.ts).

import { readFile, rename } from "node:fs/promises";
import { join } from "node:path";
import { HOST_CREDENTIAL_FILE } from "../../common/protocol/messages.ts";
import { writeNewFile } from "../files/new-file.ts";

export async function readHostCredential(workDir: string): Promise<string | null> {
  try {
    const text = (await readFile(join(workDir, HOST_CREDENTIAL_FILE), "utf8")).trim();
    return text === "" ? null : text;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
    throw error;
  }
}

export async function writeHostCredential(workDir: string, credential: string): Promise<void> {
  const path = join(workDir, HOST_CREDENTIAL_FILE);
  const temporary = `${path}.${process.pid}.tmp`;
  writeNewFile(temporary, `${credential}\n`);
  await rename(temporary, path);
}

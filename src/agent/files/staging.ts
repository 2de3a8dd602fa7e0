// An attempt's files moved through the server: its inputs fetched into its working folder before
// the job starts, its outputs uploaded once it has succeeded. An output is read as the job's file
// (job-written-file.ts): a link the job left to another's file is refused, not uploaded.

import { createWriteStream, openAsBlob } from "node:fs";
import { chmod, mkdir, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type { StartMessage } from "../../common/protocol/messages.ts";
import { agentFileRoutes } from "../../common/protocol/messages.ts";
import type { HttpClient } from "../../common/transport/http-client.ts";
import { openJobFile } from "./job-written-file.ts";

export async function stageInputs(http: HttpClient, spec: StartMessage, runDir: string): Promise<void> {
  for (const path of spec.inputs) {
    const target = join(runDir, path);
    await mkdir(dirname(target), { recursive: true });
    const response = await http.request({ path: agentFileRoutes.input(spec.jobId, path) });
    if (!response.ok || !response.body) throw new Error(`GET input ${path}: HTTP ${response.status}`);
    await pipeline(Readable.fromWeb(response.body), createWriteStream(target));
    // Inputs are often the program itself (GridWay stages the executable): let it run.
    await chmod(target, 0o755);
  }
}

/** Uploads the outputs; `refused`: files that are there but not the job's own (links to others' files). */
export async function stageOutputs(
  http: HttpClient,
  spec: StartMessage,
  runDir: string,
  owner: number | null,
): Promise<{ uploaded: string[]; refused: string[] }> {
  const uploaded: string[] = [];
  const refused: string[] = [];
  const under = spec.gang?.outputsUnder ?? null;
  for (const file of spec.outputs) {
    const source = await openJobFile(join(runDir, file), owner);
    if (!source) {
      // stat opens nothing: it tells a file that is there, but another's, from a missing one.
      if ((await stat(join(runDir, file)).catch(() => null))?.isFile()) refused.push(file);
      continue;
    }
    const path = under ? `${under}/${file}` : file;
    try {
      // The file is read anew for each try, so that a try cut halfway is sent again whole.
      const response = await http.request({
        method: "PUT",
        path: agentFileRoutes.output(spec.jobId, spec.taskIndex, spec.attempt, path),
        headers: { "content-type": "application/octet-stream" },
        body: () => openAsBlob(source.path),
        idempotent: true,
      });
      if (!response.ok)
        throw new Error(`PUT output ${path}: HTTP ${response.status} ${await response.text()}`);
    } finally {
      await source.close();
    }
    uploaded.push(path);
  }
  return { uploaded, refused };
}

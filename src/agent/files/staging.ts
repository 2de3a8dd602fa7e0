// An attempt's files moved in and out: its inputs fetched into its working folder before the job
// starts (uploaded ones from the server, URL inputs from their own servers), its outputs uploaded
// to the server once it has succeeded. An input comes through the host's content cache
// (cache/content-cache.ts), by the digest the server gives an uploaded one or the job file gives a
// URL (else by the URL, revalidated), so that the tasks of an array on one host fetch their common
// input once (with `--cache-gb 0` the cache is off: each task fetches its own copy); an uploaded
// input the server has no digest of (stored by an earlier version) is fetched straight into the
// folder. An output is read as the job's file (job-written-file.ts): a link the job left to
// another's file is refused, not uploaded.

import { openAsBlob } from "node:fs";
import { chmod, mkdir, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { relativePathProblem } from "../../common/model/relative-path.ts";
import type { StartMessage } from "../../common/protocol/messages.ts";
import { agentFileRoutes, INPUT_DIGEST_HEADER } from "../../common/protocol/messages.ts";
import type { HttpClient, RetryPolicy } from "../../common/transport/http-client.ts";
import { cacheKeyOf } from "../cache/cache-key.ts";
import type { ContentCache } from "../cache/content-cache.ts";
import { type DownloadSource, download, shownUrl } from "../cache/download.ts";
import { urlSource } from "../cache/url-source.ts";
import { openJobFile } from "./job-written-file.ts";

/**
 * An attempt's files moved to and from the server wait out a server that answers "not now" (503:
 * a standby with no leader, a store that is unavailable; a redirect; no connection), however long
 * that lasts: the host is fine, the work done is kept, and the attempt's end could not be reported
 * meanwhile anyway (it waits in the agent's outbox). Each try keeps its own timeout; an answer that
 * is not "not now" (409: the attempt is no longer current; 404) ends the wait at once. Without this
 * an outage of the broker's store longer than the client's budget (30 s) would end an attempt that
 * succeeded as `lost`, and its task would run again.
 */
export const SERVER_FILES_RETRY: Partial<RetryPolicy> = { budgetMs: Number.POSITIVE_INFINITY };

/** What staging inputs needs: the server's files, and the host's cache. */
export interface InputStaging {
  http: HttpClient;
  cache: ContentCache;
}

export async function stageInputs(context: InputStaging, spec: StartMessage, runDir: string): Promise<void> {
  for (const path of spec.inputs) {
    const target = join(runDir, path);
    await mkdir(dirname(target), { recursive: true });
    await stageUploadedInput(context, spec.jobId, path, target);
    // Inputs are often the program itself (GridWay stages the executable): let it run.
    await chmod(target, 0o755);
  }
  for (const input of spec.urlInputs ?? []) {
    const problem = relativePathProblem(input.as);
    if (problem !== null)
      throw new Error(`${shownUrl(input.url)}: as ${JSON.stringify(input.as)} ${problem}`);
    const target = join(runDir, input.as);
    await mkdir(dirname(target), { recursive: true });
    await stageUrlInput(context.cache, input, target);
    await chmod(target, 0o755);
  }
}

/** A URL input: by its digest when it has one (no request at all once cached), else by its URL. */
async function stageUrlInput(
  cache: ContentCache,
  input: { url: string; sha256?: string },
  target: string,
): Promise<void> {
  const source = urlSource(input.url);
  const key = cacheKeyOf(input);
  if (key?.kind === "digest") await cache.placeByDigest(key.sha256, source, target);
  else await cache.placeByUrl(input.url, source, target);
}

/** An input uploaded at submit: its digest first (a HEAD), then from the cache or the server. */
async function stageUploadedInput(
  { http, cache }: InputStaging,
  jobId: string,
  path: string,
  target: string,
): Promise<void> {
  const route = agentFileRoutes.input(jobId, path);
  const source: DownloadSource = {
    name: `input ${path}`,
    open: (headers, signal) => http.request({ path: route, headers, signal, retry: SERVER_FILES_RETRY }),
  };
  const head = await http.request({ method: "HEAD", path: route, retry: SERVER_FILES_RETRY });
  if (!head.ok) throw new Error(`HEAD input ${path}: HTTP ${head.status}`);
  const key = cacheKeyOf({ sha256: head.headers.get(INPUT_DIGEST_HEADER) });
  if (key?.kind === "digest") await cache.placeByDigest(key.sha256, source, target);
  else await download(source, target);
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
        retry: SERVER_FILES_RETRY,
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

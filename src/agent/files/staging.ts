// An attempt's files moved in and out: its inputs fetched into its working folder before the job
// starts (uploaded ones from the server, URL inputs from their own servers, s3: ones from their
// store, signed with the S3 settings the agent resolves for the attempt, a job's secret's when it
// names one: s3/attempt-s3-settings.ts), its
// outputs uploaded to the server once it has succeeded, and those with a URL pushed there
// (url-outputs.ts). An input comes through the host's content cache
// (cache/content-cache.ts), by the digest the server gives an uploaded one or the job file gives a
// URL (else by the URL, revalidated), so that the tasks of an array on one host fetch their common
// input once (with `--cache-gb 0` the cache is off: each task fetches its own copy); an uploaded
// input the server has no digest of (stored by an earlier version) is fetched straight into the
// folder. An output is read as the job's file (job-written-file.ts): a link the job left to
// another's file is refused, not uploaded. An output the server cannot keep because its storage is
// full (507) is sent again later, for up to OUTPUT_STORAGE_FULL_BUDGET_MS: the result waits on the
// host meanwhile (the attempt holds its slot) instead of being thrown away.

import { openAsBlob } from "node:fs";
import { chmod, mkdir, stat } from "node:fs/promises";
import { dirname, join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { relativePathProblem } from "../../common/model/relative-path.ts";
import { isS3Url } from "../../common/model/s3-url.ts";
import { redactSecretValues } from "../../common/model/secret-redaction.ts";
import type { StartMessage } from "../../common/protocol/messages.ts";
import { agentFileRoutes, INPUT_DIGEST_HEADER } from "../../common/protocol/messages.ts";
import { monotonicMs } from "../../common/time/clocks.ts";
import type { HttpClient, RetryPolicy } from "../../common/transport/http-client.ts";
import { cacheKeyOf } from "../cache/cache-key.ts";
import type { ContentCache } from "../cache/content-cache.ts";
import { type DownloadSource, download, shownUrl } from "../cache/download.ts";
import { s3Source } from "../cache/s3-source.ts";
import { urlSource } from "../cache/url-source.ts";
import { agentAwsValues } from "../s3/agent-credentials.ts";
import { attemptS3Settings } from "../s3/attempt-s3-settings.ts";
import type { S3Settings } from "../s3/s3-settings.ts";
import { openJobFile } from "./job-written-file.ts";
import { pushOutputs } from "./url-outputs.ts";

/** The answer of a server whose store or blob folder is full (nothing of the request was kept). */
export const STORAGE_FULL_STATUS = 507;
/** An output refused for a full storage is sent again after this long, doubling up to the cap. */
export const OUTPUT_STORAGE_FULL_FIRST_DELAY_MS = 1000;
export const OUTPUT_STORAGE_FULL_MAX_DELAY_MS = 30_000;
/** ...for this long at most; then the attempt ends lost (staging) and its task runs again. */
export const OUTPUT_STORAGE_FULL_BUDGET_MS = 3_600_000;

/** How long to wait before the try after `tries` refused ones: doubling from the first delay, capped. */
export function storageFullDelayMs(tries: number): number {
  return Math.min(
    OUTPUT_STORAGE_FULL_MAX_DELAY_MS,
    OUTPUT_STORAGE_FULL_FIRST_DELAY_MS * 2 ** Math.max(0, tries - 1),
  );
}

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

/**
 * Runs `work`, its error's message (what the attempt's end reports) with the start's secrets put out
 * of sight (model/secret-redaction.ts); the error itself is kept, with its code.
 */
async function redactingSecrets<T>(spec: Pick<StartMessage, "secrets">, work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (spec.secrets !== undefined && error instanceof Error)
      error.message = redactSecretValues(error.message, Object.values(spec.secrets));
    throw error;
  }
}

export function stageInputs(context: InputStaging, spec: StartMessage, runDir: string): Promise<void> {
  return redactingSecrets(spec, () => stageEachInput(context, spec, runDir));
}

async function stageEachInput(context: InputStaging, spec: StartMessage, runDir: string): Promise<void> {
  for (const path of spec.inputs) {
    const target = join(runDir, path);
    await mkdir(dirname(target), { recursive: true });
    await stageUploadedInput(context, spec, path, target);
    // Inputs are often the program itself (GridWay stages the executable): let it run.
    await chmod(target, 0o755);
  }
  const s3 = attemptS3Settings(spec.secrets, agentAwsValues);
  for (const input of spec.urlInputs ?? []) {
    const problem = relativePathProblem(input.as);
    if (problem !== null)
      throw new Error(`${shownUrl(input.url)}: as ${JSON.stringify(input.as)} ${problem}`);
    const target = join(runDir, input.as);
    await mkdir(dirname(target), { recursive: true });
    await stageUrlInput(context.cache, input, target, () => s3(input.credentials));
    await chmod(target, 0o755);
  }
}

/** A URL input: by its digest when it has one (no request at all once cached), else by its URL. */
async function stageUrlInput(
  cache: ContentCache,
  input: { url: string; sha256?: string },
  target: string,
  s3: () => S3Settings,
): Promise<void> {
  const source = isS3Url(input.url) ? s3Source(input.url, settingsFor(input.url, s3)) : urlSource(input.url);
  const key = cacheKeyOf(input);
  if (key?.kind === "digest") await cache.placeByDigest(key.sha256, source, target);
  else await cache.placeByUrl(input.url, source, target);
}

/** The S3 settings of an input's fetch; an error names its URL. */
function settingsFor(url: string, s3: () => S3Settings): S3Settings {
  try {
    return s3();
  } catch (error) {
    throw new Error(`${shownUrl(url)}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/**
 * An input uploaded at submit: by the digest the start gives it, else by the one a HEAD of it
 * answers (a server of an earlier version sends none in the start), from the cache or the server.
 */
async function stageUploadedInput(
  { http, cache }: InputStaging,
  spec: Pick<StartMessage, "jobId" | "inputDigests">,
  path: string,
  target: string,
): Promise<void> {
  const route = agentFileRoutes.input(spec.jobId, path);
  const source: DownloadSource = {
    name: `input ${path}`,
    open: (headers, signal) => http.request({ path: route, headers, signal, retry: SERVER_FILES_RETRY }),
  };
  const given = spec.inputDigests && Object.hasOwn(spec.inputDigests, path) ? spec.inputDigests[path] : null;
  const key = cacheKeyOf({ sha256: given ?? (await askedDigest(http, route, path)) });
  if (key?.kind === "digest") await cache.placeByDigest(key.sha256, source, target);
  else await download(source, target);
}

/** An uploaded input's digest as the server answers a HEAD of it; null for one stored without. */
async function askedDigest(http: HttpClient, route: string, path: string): Promise<string | null> {
  const head = await http.request({ method: "HEAD", path: route, retry: SERVER_FILES_RETRY });
  if (!head.ok) throw new Error(`HEAD input ${path}: HTTP ${head.status}`);
  return head.headers.get(INPUT_DIGEST_HEADER);
}

/**
 * Uploads the outputs, then pushes those with a URL; `uploaded`: the paths uploaded or pushed,
 * `refused`: files that are there but not the job's own (links to others' files).
 */
export function stageOutputs(
  http: HttpClient,
  spec: StartMessage,
  runDir: string,
  owner: number | null,
): Promise<{ uploaded: string[]; refused: string[] }> {
  return redactingSecrets(spec, () => stageEachOutput(http, spec, runDir, owner));
}

async function stageEachOutput(
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
      const route = agentFileRoutes.output(spec.jobId, spec.taskIndex, spec.attempt, path);
      const deadline = monotonicMs() + OUTPUT_STORAGE_FULL_BUDGET_MS;
      for (let refused = 1; ; refused++) {
        // The file is read anew for each try, so that a try cut halfway is sent again whole.
        const response = await http.request({
          method: "PUT",
          path: route,
          headers: { "content-type": "application/octet-stream" },
          body: () => openAsBlob(source.path),
          idempotent: true,
          retry: SERVER_FILES_RETRY,
        });
        if (response.ok) break;
        const text = await response.text();
        const wait = storageFullDelayMs(refused);
        if (response.status !== STORAGE_FULL_STATUS || monotonicMs() + wait > deadline)
          throw new Error(`PUT output ${path}: HTTP ${response.status} ${text}`);
        await sleep(wait);
      }
    } finally {
      await source.close();
    }
    uploaded.push(path);
  }
  const s3 = attemptS3Settings(spec.secrets, agentAwsValues);
  const pushed = await pushOutputs(spec.urlOutputs ?? [], runDir, owner, s3);
  return { uploaded: [...uploaded, ...pushed.pushed], refused: [...refused, ...pushed.refused] };
}

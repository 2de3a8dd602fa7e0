// What an agent moves itself, besides the server's files: the host fact `transfers` (a list of the
// names below) says which of these its release does, and a job that needs one goes only to hosts
// whose agent says so (broker/scheduler/stages/feasibility.ts). An agent of an earlier release
// says none: a job with s3: inputs or outputs pushed to a URL is never started there, where the
// start message's new fields would be dropped unread (an agent from before inputs by URL would
// start the job without them). No I/O.

import { isS3Url } from "./s3-url.ts";

/** http: and https: inputs, fetched by the agent itself. */
export const URL_INPUTS = "url-inputs";
/** s3://bucket/key inputs, fetched by the agent with AWS Signature V4. */
export const S3_INPUTS = "s3-inputs";
/** Outputs with `to` (http:, https:, s3:), pushed by the agent once the job succeeded. */
export const URL_OUTPUTS = "url-outputs";

/**
 * s3: transfers signed with the credentials of a secret the job names (`credentials`), sent in the
 * start message: an agent without it would drop them unread and sign with its own.
 */
export const S3_CREDENTIALS = "s3-credentials";

/** Everything the agent of this release moves itself: its `transfers` fact. */
export const AGENT_TRANSFERS: readonly string[] = [URL_INPUTS, S3_INPUTS, URL_OUTPUTS, S3_CREDENTIALS];

/** What a job's inputs and outputs need of its host's agent, in AGENT_TRANSFERS' order; empty: nothing. */
export function transfersNeeded(
  inputs: readonly (string | { url: string; credentials?: string })[],
  outputs: readonly (string | { path: string; to: string; credentials?: string })[],
): string[] {
  const needed: string[] = [];
  const byUrl = inputs.filter((input) => typeof input !== "string");
  if (byUrl.some((input) => !isS3Url(input.url))) needed.push(URL_INPUTS);
  if (byUrl.some((input) => isS3Url(input.url))) needed.push(S3_INPUTS);
  const pushed = outputs.filter((output) => typeof output !== "string");
  if (pushed.length > 0) needed.push(URL_OUTPUTS);
  if ([...byUrl, ...pushed].some((entry) => entry.credentials !== undefined)) needed.push(S3_CREDENTIALS);
  return needed;
}

/** The first of `needed` that a host whose agent does `offered` (absent: an earlier release) lacks, or null. */
export function missingTransfer(
  needed: readonly string[],
  offered: readonly string[] | undefined,
): string | null {
  for (const name of needed) if (!offered?.includes(name)) return name;
  return null;
}

// A job's inputs (job-spec.ts `inputs`): a path, uploaded at submit and stored by the server, or
// a URL the agent fetches itself, `{url, sha256?, as?}`: `url` http:, https: or s3://bucket/key
// (s3-url.ts), `sha256` the digest its content must have, `as` the file's name in the job's
// working folder (by default the last segment of the URL's path, or of an s3: URL's key), which
// must stay inside it as a path input does. The rules here; the schema's place is job-spec.ts.

import { z } from "zod";
import { credentialsField } from "./job-credentials.ts";
import { relativePathProblem } from "./relative-path.ts";
import { isS3Url, parseS3Url, s3UrlProblem } from "./s3-url.ts";

/** The schemes a URL input may have. */
export const INPUT_URL_SCHEMES: readonly string[] = ["http:", "https:", "s3:"];

/** The longest URL an input may have. */
export const INPUT_URL_MAX_CHARS = 8192;

/** What is wrong with an input's URL, or null. */
export function urlProblem(url: string): string | null {
  if (isS3Url(url)) return s3UrlProblem(url);
  const parsed = URL.parse(url);
  if (parsed === null) return "is not a URL";
  if (!INPUT_URL_SCHEMES.includes(parsed.protocol))
    return `must be an http:, https: or s3: URL, not ${parsed.protocol}`;
  if (parsed.hostname === "") return "names no host";
  return null;
}

/**
 * The last segment of the URL's path (of an s3: URL's key), decoded: the file's name when `as` is
 * left out; null for none.
 */
export function defaultInputName(url: string): string | null {
  if (isS3Url(url)) {
    const object = parseS3Url(url);
    const name = typeof object === "string" ? "" : (object.key.split("/").at(-1) ?? "");
    return name === "" ? null : name;
  }
  const parsed = URL.parse(url);
  const segment = parsed?.pathname.split("/").at(-1) ?? "";
  if (segment === "") return null;
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

const SHA256_HEX = /^[0-9a-fA-F]{64}$/;

export const urlInputSchema = z
  .strictObject({
    url: z
      .string()
      .max(INPUT_URL_MAX_CHARS)
      .meta({
        description:
          "Where the agent fetches the file from, itself (not through the server): an `http:` or `https:` URL, or `s3://bucket/key` (an object of an S3-compatible store, signed with the agent's own AWS credentials or the secret `credentials` names, docs/data.md). Tried again on failure, a cut transfer resumed where the server allows, and kept in the host's content cache.",
        examples: ["https://data.example.org/runs/grid.nc", "s3://climate/runs/grid.nc"],
      }),
    sha256: z
      .string()
      .regex(SHA256_HEX, "must be a SHA-256 digest: 64 hexadecimal digits")
      .optional()
      .meta({
        description:
          "The SHA-256 of the file's content (hex): a file that differs fails the attempt (a system failure naming the URL); the host's cache then knows the file by it, without asking the server again, and the scheduler prefers hosts whose cache holds it (data affinity).",
        examples: ["9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"],
      }),
    as: z
      .string()
      .optional()
      .meta({
        description:
          "The file's path in the job's working folder (absent: the last segment of the URL's path, or of an s3: URL's key). It may not leave the folder.",
        examples: ["grid.nc"],
      }),
    credentials: credentialsField(
      "The name of the submitter's secret (`steward secret set NAME`) whose S3 credentials the agent signs this s3: input's fetch with, in place of its own; only for an s3: URL. The job shows the name only.",
    ),
  })
  .superRefine((input, context) => {
    const problem = urlProblem(input.url);
    if (problem !== null) {
      context.addIssue({ code: "custom", path: ["url"], message: problem });
      return;
    }
    if (input.credentials !== undefined && !isS3Url(input.url))
      context.addIssue({
        code: "custom",
        path: ["credentials"],
        message: "only an s3: URL takes credentials",
      });
    if (input.as !== undefined) {
      const wrong = relativePathProblem(input.as);
      if (wrong !== null)
        context.addIssue({ code: "custom", path: ["as"], message: `${JSON.stringify(input.as)} ${wrong}` });
      return;
    }
    const name = defaultInputName(input.url);
    const wrong = name === null ? "names no file at the end of its path: give as" : relativePathProblem(name);
    if (wrong !== null)
      context.addIssue({
        code: "custom",
        path: ["url"],
        message: name === null ? wrong : `its last segment ${JSON.stringify(name)} ${wrong}: give as`,
      });
  });

export type UrlInput = z.output<typeof urlInputSchema>;

/** An input as a job file gives it. */
export type JobInput = string | UrlInput;

/** A URL input as the agent is sent it: its name in the working folder resolved. */
export interface FetchedInput {
  url: string;
  sha256?: string;
  as: string;
  /** The secret whose credentials sign it (absent: the agent's own). */
  credentials?: string;
}

export function isUrlInput(input: JobInput): input is UrlInput {
  return typeof input !== "string";
}

/** The input's path in the working folder. */
export function inputName(input: JobInput): string {
  if (!isUrlInput(input)) return input;
  return input.as ?? defaultInputName(input.url) ?? "";
}

/** The inputs uploaded at submit (the paths), in order. */
export function uploadedInputs(inputs: readonly JobInput[]): string[] {
  return inputs.filter((input): input is string => !isUrlInput(input));
}

/** The URL inputs, their names resolved, their digests in lower case. */
export function fetchedInputs(inputs: readonly JobInput[]): FetchedInput[] {
  return inputs.filter(isUrlInput).map((input) => ({
    url: input.url,
    ...(input.sha256 === undefined ? {} : { sha256: input.sha256.toLowerCase() }),
    as: inputName(input),
    ...(input.credentials === undefined ? {} : { credentials: input.credentials }),
  }));
}

/**
 * A URL input whose file would have the name of another input's (two files at one path): its
 * field and the message; null when there is none. Paths given twice are left as they
 * always were.
 */
export function inputNameClash(inputs: readonly JobInput[]): { field: string; message: string } | null {
  const first = new Map<string, number>();
  for (const [index, input] of inputs.entries()) {
    const name = inputName(input);
    const earlier = first.get(name);
    if (earlier !== undefined && (isUrlInput(input) || isUrlInput(inputs[earlier]))) {
      const field = isUrlInput(input) ? (input.as === undefined ? "url" : "as") : null;
      return {
        field: field === null ? `inputs[${index}]` : `inputs[${index}].${field}`,
        message: `${JSON.stringify(name)} is also the name of inputs[${earlier}] in the working folder`,
      };
    }
    if (earlier === undefined) first.set(name, index);
  }
  return null;
}

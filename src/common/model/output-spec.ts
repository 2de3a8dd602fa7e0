// A job's outputs (job-spec.ts `outputs`): a path, collected by the server when the attempt
// succeeds (`steward fetch`), or `{path, to}`, a file the agent pushes itself to a URL once the job
// succeeded: `to` is `s3://bucket/key` (a signed PUT, s3-url.ts) or an `http:`/`https:` URL it
// PUTs the file to. One URL is one object: an array's tasks must each name their own (`${param}`
// in `to`, put in URL-encoded per task), and a job whose attempts may each succeed at once
// (replicas, every rank's outputs) may not have them. The rules here; the schema's place is job-spec.ts.

import { z } from "zod";
import { substituteParam, type TaskParam } from "./array-params.ts";
import { credentialsField } from "./job-credentials.ts";
import { relativePathProblem } from "./relative-path.ts";
import { isS3Url, s3UrlProblem } from "./s3-url.ts";

/** The schemes an output's `to` may have. */
export const OUTPUT_URL_SCHEMES: readonly string[] = ["http:", "https:", "s3:"];

/** The longest `to` an output may have. */
export const OUTPUT_URL_MAX_CHARS = 8192;

/** `${param}`, `${param.KEY}` with or without a modifier, not `$${...}` (array-params.ts). */
const PLACEHOLDER = /(\$?)\$\{param[^}]*\}/g;

/** Whether `to` names the task's parameter (an unescaped `${param...}`). */
export function namesParam(to: string): boolean {
  for (const match of to.matchAll(PLACEHOLDER)) if (match[1] !== "$") return true;
  return false;
}

/** What is wrong with an output's `to`, its placeholders taken as a plain word; or null. */
export function outputUrlProblem(to: string): string | null {
  const probe = to.replace(PLACEHOLDER, (whole, escaped: string) => (escaped === "$" ? whole.slice(1) : "x"));
  if (isS3Url(probe)) return s3UrlProblem(probe);
  const parsed = URL.parse(probe);
  if (parsed === null) return "is not a URL";
  if (!OUTPUT_URL_SCHEMES.includes(parsed.protocol))
    return `must be an http:, https: or s3: URL, not ${parsed.protocol}`;
  if (parsed.hostname === "") return "names no host";
  return null;
}

export const urlOutputSchema = z
  .strictObject({
    path: z.string().meta({
      description:
        "The file in the job's working folder, as a plain output names it. It may not leave the folder.",
      examples: ["results/summary.csv"],
    }),
    to: z
      .string()
      .max(OUTPUT_URL_MAX_CHARS)
      .meta({
        description:
          // biome-ignore lint/suspicious/noTemplateCurlyInString: the job file's placeholder, as users write it
          "Where the agent puts the file itself once the job succeeded (not through the server, nor `steward fetch`): `s3://bucket/key` (a PUT signed with the agent's AWS credentials) or an `http:`/`https:` URL it PUTs the file to. Tried again on a server's failure; one that fails for good fails the attempt as a system failure naming the URL. In an array, `${param}` or `${param.KEY}` names each task's own object (its parameter, URL-encoded).",
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the job file's placeholder, as users write it
        examples: ["s3://results/cfd/summary.csv", "s3://results/sweep/${param}.csv"],
      }),
    credentials: credentialsField(
      "The name of the submitter's secret (`steward secret set NAME`) whose S3 credentials the agent signs this s3: push with, in place of its own; only for an s3: `to`. The job shows the name only.",
    ),
  })
  .superRefine((output, context) => {
    const wrong = relativePathProblem(output.path);
    if (wrong !== null)
      context.addIssue({
        code: "custom",
        path: ["path"],
        message: `${JSON.stringify(output.path)} ${wrong}`,
      });
    const problem = outputUrlProblem(output.to);
    if (problem !== null) context.addIssue({ code: "custom", path: ["to"], message: problem });
    else if (output.credentials !== undefined && !isS3Url(output.to))
      context.addIssue({
        code: "custom",
        path: ["credentials"],
        message: "only an s3: URL takes credentials",
      });
  });

export type UrlOutput = z.output<typeof urlOutputSchema>;

/** An output as a job file gives it. */
export type JobOutput = string | UrlOutput;

export function isUrlOutput(output: JobOutput): output is UrlOutput {
  return typeof output !== "string";
}

/** The output's file in the working folder. */
export function outputPath(output: JobOutput): string {
  return isUrlOutput(output) ? output.path : output;
}

/** The outputs the server collects (the paths), in order. */
export function storedOutputs(outputs: readonly JobOutput[]): string[] {
  return outputs.filter((output): output is string => !isUrlOutput(output));
}

/** Every output's file: what a succeeded attempt must have moved, to the server or to its URL. */
export function outputPaths(outputs: readonly JobOutput[]): string[] {
  return outputs.map(outputPath);
}

/** A task's parameter with each value URL-encoded: what `${param}` puts in a URL. */
function urlEncodedParam(param: TaskParam): TaskParam {
  if (typeof param === "string") return encodeURIComponent(param);
  const encoded: Record<string, string> = {};
  for (const [key, value] of Object.entries(param)) encoded[key] = encodeURIComponent(String(value));
  return encoded;
}

/** The outputs a task's agent pushes, `to` with the task's parameter put in (URL-encoded). */
export function pushedOutputs(outputs: readonly JobOutput[], param: TaskParam | undefined): UrlOutput[] {
  return outputs.filter(isUrlOutput).map((output) => ({
    path: output.path,
    to: param === undefined ? output.to : substituteParam(output.to, urlEncodedParam(param)),
    ...(output.credentials === undefined ? {} : { credentials: output.credentials }),
  }));
}

/** What an output's `to` must agree with in the rest of the job file. */
interface OutputsJob {
  outputs: readonly JobOutput[];
  array?: { params?: unknown[]; paramsFile?: string };
  replicas: number;
  nodes?: number;
  outputsFrom?: string;
}

/**
 * The first output pushed to a URL that the rest of the job would make more than one attempt push
 * at once, or in vain: its field and why; null when there is none.
 */
export function urlOutputsProblem(spec: OutputsJob): { field: string; message: string } | null {
  for (const [index, output] of spec.outputs.entries()) {
    if (!isUrlOutput(output)) continue;
    const field = `outputs[${index}].to`;
    const params = spec.array?.params !== undefined || spec.array?.paramsFile !== undefined;
    if (spec.replicas > 1)
      return {
        field,
        message:
          "every replica that succeeds would push to this one URL: drop replicas, or make it a plain output",
      };
    if ((spec.nodes ?? 1) > 1 && spec.outputsFrom === "all")
      return {
        field,
        message:
          "with outputsFrom: all every rank would push to this one URL: collect it from rank 0, or make it a plain output",
      };
    if (namesParam(output.to) && !params)
      return {
        field,
        // biome-ignore lint/suspicious/noTemplateCurlyInString: the job file's placeholder, as users write it
        message: "names ${param}, but the job has no array parameters (array.params or array.paramsFile)",
      };
    if (spec.array !== undefined && !namesParam(output.to))
      return {
        field,
        message:
          // biome-ignore lint/suspicious/noTemplateCurlyInString: the job file's placeholder, as users write it
          "every task of the array would push to this one URL: name each task's own with ${param} or ${param.KEY} (array.params)",
      };
  }
  return null;
}

// Reading a job file (or standard input, `-`) on the client: parse it, check that its inputs exist and stay inside the job
// file's folder, and build the request. The schema is the server's to check (it answers 400 naming
// the field and its line and column, which `submit` prints as the job file's error): the CLI does
// not load the schema's libraries, so a submit starts in a tenth of a second. The file's text goes
// as it is (application/yaml, or the multipart `job` field), so that the server's errors point
// into it; a job file that names no inputs is not even parsed here.

import { existsSync, openAsBlob, readFileSync, statSync } from "node:fs";
import { dirname, isAbsolute, join, normalize, resolve } from "node:path";
import { CliError } from "../common/command-line/cli-error.ts";
import { JobFileError } from "../common/model/jobfile-error.ts";
import { placeJobFileError } from "../common/model/jobfile-place.ts";
import { parseJobFileText } from "../common/model/jobfile-text.ts";

export interface LoadedJobFile {
  /** The job file as data; null when it is sent as its text (it names no inputs). */
  raw: Record<string, unknown> | null;
  /** The job file's text, when it is sent as it is. */
  text?: string;
  /** The job file's text as read, sent in its place (absent: a job made from `run`'s flags). */
  source?: string;
  /** The input files named (valid relative paths only; the server refuses the others). */
  inputs: string[];
  folder: string;
}

/** A path the job file may name: relative, and not leaving its folder. */
function staysInside(path: string): boolean {
  const normal = normalize(path);
  return !isAbsolute(path) && normal !== ".." && !normal.startsWith("../");
}

/** `-` names standard input: its inputs are then relative to the current folder. */
export const STDIN = "-";

export function loadJobFile(path: string): LoadedJobFile {
  const fromStdin = path === STDIN;
  if (!fromStdin && !existsSync(path)) throw new CliError(`no such job file: ${path}`, 2);
  const folder = fromStdin ? process.cwd() : dirname(resolve(path));
  const label = fromStdin ? "standard input" : path;
  const text = readFileSync(fromStdin ? 0 : path, "utf8");
  try {
    // No inputs to find and upload: the YAML parser (a fifth of a submit's time) is not loaded.
    if (!/inputs/.test(text)) return { raw: null, text, source: text, inputs: [], folder };
    const raw = parseJobFileText(text);
    if (typeof raw !== "object" || raw === null || Array.isArray(raw))
      throw new JobFileError("", "a job file is a mapping of fields (command, inputs, ...)");
    const record = raw as Record<string, unknown>;
    return { raw: record, source: text, inputs: inputFiles(record.inputs, folder), folder };
  } catch (error) {
    if (error instanceof JobFileError) throw jobFileCliError(label, error, text);
    throw error;
  }
}

/** A job file's error found here, as the server would word it: `job.yaml: line 3, column 3: ...` (exit 2). */
function jobFileCliError(label: string, error: JobFileError, text: string): CliError {
  return new CliError(`${label}: ${placeJobFileError(error, text).message}`, 2);
}

/**
 * The input files a job names that exist in `folder` (valid relative paths only: the server refuses
 * the others, naming them); a valid path with no file behind it is the job file's error.
 */
export function inputFiles(named: unknown, folder: string): string[] {
  const inputs: string[] = [];
  (Array.isArray(named) ? named : []).forEach((input, index) => {
    if (typeof input !== "string" || !staysInside(input)) return;
    const file = join(folder, input);
    if (!existsSync(file) || !statSync(file).isFile()) {
      throw new JobFileError(`inputs[${index}]`, `${input}: no such file in ${folder}`);
    }
    inputs.push(input);
  });
  return inputs;
}

/**
 * The request body: the text as YAML or the data as JSON when there are no inputs, else multipart
 * with the files streamed from disk.
 */
export async function submissionBody(
  job: LoadedJobFile,
): Promise<{ json?: unknown; body?: FormData | string; headers?: Record<string, string> }> {
  if (job.text !== undefined) return { body: job.text, headers: { "content-type": "application/yaml" } };
  if (job.inputs.length === 0) return { json: job.raw };
  const form = new FormData();
  // The text as read, so that the server's errors name its lines (it reads JSON or YAML).
  form.set("job", job.source ?? JSON.stringify(job.raw));
  for (const input of job.inputs) {
    form.append(input, await openAsBlob(join(job.folder, input)), input);
  }
  return { body: form };
}

/** A workflow file as read on the client: the data, and each job's input files by the job's name. */
export interface LoadedWorkflowFile {
  raw: Record<string, unknown>;
  /** The text as it is, sent when no job names inputs. */
  text: string;
  inputs: Map<string, string[]>;
  folder: string;
}

/**
 * A top-level `jobs:` (YAML) or `"jobs":` (JSON) may make a file a workflow file: only then is it
 * parsed here to tell (a job file's text is sent as it is).
 */
const MAYBE_WORKFLOW = /^jobs\s*:|"jobs"\s*:/m;

/**
 * The file as a workflow file (a mapping with a top-level `jobs`), with its jobs' inputs found in
 * its folder; null when it is a job file. The workflow's own checks are the server's.
 */
export function loadWorkflowFile(job: LoadedJobFile, label: string): LoadedWorkflowFile | null {
  try {
    let raw = job.raw;
    let text = job.text;
    if (raw === null) {
      if (text === undefined || !MAYBE_WORKFLOW.test(text)) return null;
      const parsed = parseJobFileText(text);
      if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) return null;
      raw = parsed as Record<string, unknown>;
    }
    if (!("jobs" in raw)) return null;
    text ??= job.source ?? JSON.stringify(raw);
    const inputs = new Map<string, string[]>();
    const jobs = raw.jobs;
    if (jobs !== null && typeof jobs === "object" && !Array.isArray(jobs)) {
      for (const [name, each] of Object.entries(jobs as Record<string, unknown>)) {
        if (each === null || typeof each !== "object") continue;
        try {
          const found = inputFiles((each as Record<string, unknown>).inputs, job.folder);
          if (found.length > 0) inputs.set(name, found);
        } catch (error) {
          if (error instanceof JobFileError) throw error.under(["jobs", name]);
          throw error;
        }
      }
    }
    return { raw, text, inputs, folder: job.folder };
  } catch (error) {
    if (error instanceof JobFileError) throw jobFileCliError(label, error, job.source ?? "");
    throw error;
  }
}

/**
 * A workflow's request body: its text as YAML when no job names inputs, else multipart with the
 * file as JSON in `workflow`, then each input streamed from disk as a part named NAME/PATH.
 */
export async function workflowBody(
  file: LoadedWorkflowFile,
): Promise<{ body: FormData | string; headers?: Record<string, string> }> {
  if (file.inputs.size === 0) return { body: file.text, headers: { "content-type": "application/yaml" } };
  const form = new FormData();
  // The text as read, so that the server's errors name its lines (it reads JSON or YAML).
  form.set("workflow", file.text);
  for (const [name, inputs] of file.inputs)
    for (const input of inputs)
      form.append(`${name}/${input}`, await openAsBlob(join(file.folder, input)), input);
  return { body: form };
}

// A job file (or workflow file) that cannot be accepted, naming the first bad field by its path
// and, once its text is known (jobfile-place.ts), the line and column of the field's key. Apart
// from the schema so that what only needs to recognise the error (the CLI's error printer) does
// not load the schema.

/** A field's path in a job file: keys, and indexes of lists (`["inputs", 1]`). */
export type FieldPath = readonly (string | number)[];

/** Where a field is in the job file's text: 1-based line and column. */
export interface TextPlace {
  line: number;
  column: number;
}

export class JobFileError extends Error {
  /** The field's path as text (`resources.gpus`, `inputs[1]`); "" for the file as a whole. */
  readonly field: string;
  readonly path: FieldPath;
  /** What is wrong, without the field or its place (`unknown key (did you mean command?)`). */
  readonly problem: string;
  readonly place: TextPlace | null;
  constructor(field: string | FieldPath, problem: string, place: TextPlace | null = null) {
    const path = typeof field === "string" ? parseFieldPath(field) : field;
    const name = typeof field === "string" ? field : formatFieldPath(field);
    super(jobFileErrorMessage(name, problem, place));
    this.name = "JobFileError";
    this.field = name;
    this.path = path;
    this.problem = problem;
    this.place = place;
  }

  /** The same error under `prefix` (a workflow's `jobs.NAME`). */
  under(prefix: FieldPath): JobFileError {
    return new JobFileError([...prefix, ...this.path], this.problem, this.place);
  }
}

/**
 * The one wording of a job file's error, for the API's 400, the CLI and the dashboard:
 * `line 2, column 1: comand: unknown key (did you mean command?)`.
 */
export function jobFileErrorMessage(field: string, problem: string, place: TextPlace | null): string {
  const at = place ? `line ${place.line}, column ${place.column}: ` : "";
  return `${at}${field ? `${field}: ` : ""}${problem}`;
}

/** `["resources", "gpus"]` as `resources.gpus`, `["inputs", 1]` as `inputs[1]`. */
export function formatFieldPath(path: FieldPath): string {
  return path.reduce<string>(
    (out, part) => (typeof part === "number" ? `${out}[${part}]` : out ? `${out}.${part}` : part),
    "",
  );
}

/** `inputs[1]` as `["inputs", 1]`; a key holding a `.` cannot be told apart (give the path instead). */
export function parseFieldPath(field: string): FieldPath {
  if (field === "") return [];
  const path: (string | number)[] = [];
  for (const part of field.split(".")) {
    const match = /^([^[]*)((?:\[\d+\])*)$/.exec(part);
    if (!match) {
      path.push(part);
      continue;
    }
    if (match[1] !== "") path.push(match[1]);
    for (const index of match[2].matchAll(/\[(\d+)\]/g)) path.push(Number(index[1]));
  }
  return path;
}

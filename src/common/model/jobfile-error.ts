// A job file that cannot be accepted, naming the first bad field. Apart from the schema so that
// what only needs to recognise the error (the CLI's error printer) does not load the schema.

export class JobFileError extends Error {
  readonly field: string;
  constructor(field: string, message: string) {
    super(field ? `${field}: ${message}` : message);
    this.name = "JobFileError";
    this.field = field;
  }
}

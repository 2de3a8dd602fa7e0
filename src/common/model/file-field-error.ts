// A file the server reads at start (its pools, its shares) that cannot be accepted, naming the
// first bad field: `pools[0].maxPilots: must be at least 1`.

export class FileFieldError extends Error {
  /** The field's path as text; "" for the file as a whole. */
  readonly field: string;
  constructor(field: string, message: string) {
    super(field ? `${field}: ${message}` : message);
    this.field = field;
  }
}

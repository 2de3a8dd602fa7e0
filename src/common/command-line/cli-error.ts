// An error the command line (src/entry/main.ts) prints as one line (`steward: ...`) and exits with its code: 2 for a bad
// argument or file, 3 for anything else.

export class CliError extends Error {
  readonly exitCode: number;
  /** The HTTP status of the server's answer this error comes from, if any. */
  readonly status: number | null;
  constructor(message: string, exitCode = 3, status: number | null = null) {
    super(message);
    this.exitCode = exitCode;
    this.status = status;
  }
}

// An array's parameters file read as it comes, chunk after chunk, with bounds: at most
// MAX_PARAMS_FILE_BYTES bytes, MAX_ARRAY_TASKS lines (one task each) and MAX_PARAM_CHARS characters
// on a line. A file past one is refused as soon as the reading passes it, so a huge upload costs
// the reader one chunk and one line at most, never the whole file. The lines are those
// paramsFileLines gives for the same text (a final line break ends the last line, `\r\n` is `\n`,
// an empty line is refused). Pure: the bytes come in.

import { StringDecoder } from "node:string_decoder";
import { MAX_PARAM_CHARS } from "./array-params.ts";
import { MAX_ARRAY_TASKS } from "./job-spec.ts";
import { JobFileError } from "./jobfile-error.ts";

/** The largest parameters file, in bytes: 64 MiB (a million lines of 64 bytes on average). */
export const MAX_PARAMS_FILE_BYTES = 64 * 1024 * 1024;

const FIELD = "array.paramsFile";

/** Splits a parameters file into its lines as its bytes come; throws JobFileError past a bound. */
export class ParamsFileReader {
  readonly #name: string;
  readonly #maxBytes: number;
  readonly #maxLines: number;
  readonly #decoder = new StringDecoder("utf8");
  readonly #lines: string[] = [];
  /** The line not yet ended, in parts (a long line comes in many chunks). */
  #partial: string[] = [];
  #partialLength = 0;
  #bytes = 0;
  /** A first line that is empty: the file is empty if nothing follows, else line 1 is refused. */
  #emptyFirst = false;

  constructor(name: string, { maxBytes = MAX_PARAMS_FILE_BYTES, maxLines = MAX_ARRAY_TASKS } = {}) {
    this.#name = name;
    this.#maxBytes = maxBytes;
    this.#maxLines = maxLines;
  }

  /** Refuses a file of `bytes` bytes when it is larger than the bound (its size known before reading). */
  checkSize(bytes: number): void {
    if (bytes > this.#maxBytes)
      throw new JobFileError(
        FIELD,
        `${this.#name} is larger than ${formatBytes(this.#maxBytes)}, the largest parameters file: split the array into several jobs`,
      );
  }

  /** The file's next bytes. */
  push(chunk: Buffer): void {
    this.#bytes += chunk.byteLength;
    this.checkSize(this.#bytes);
    this.#take(this.#decoder.write(chunk));
  }

  /** The file's lines, once its bytes have all come. */
  end(): string[] {
    this.#take(this.#decoder.end());
    if (this.#partialLength > 0) this.#endLine();
    if (this.#lines.length === 0)
      throw new JobFileError(FIELD, `${this.#name} is empty: it needs one line per task`);
    return this.#lines;
  }

  #take(text: string): void {
    let at = 0;
    for (;;) {
      const newline = text.indexOf("\n", at);
      const piece = text.slice(at, newline === -1 ? text.length : newline);
      if (piece.length > 0) {
        if (this.#emptyFirst) this.#empty(1);
        this.#partial.push(piece);
        this.#partialLength += piece.length;
        // One character more than a parameter may have: a `\r` that ends the line is not in it.
        if (this.#partialLength > MAX_PARAM_CHARS + 1) this.#tooLong();
      }
      if (newline === -1) return;
      this.#endLine();
      at = newline + 1;
    }
  }

  #endLine(): void {
    let line = this.#partial.length === 1 ? this.#partial[0] : this.#partial.join("");
    this.#partial = [];
    this.#partialLength = 0;
    if (line.endsWith("\r")) line = line.slice(0, -1);
    const number = this.#lines.length + 1;
    if (this.#emptyFirst) this.#empty(1);
    if (line.length === 0) {
      // A line break alone is an empty file, as its final line break ends no line.
      if (number === 1) {
        this.#emptyFirst = true;
        return;
      }
      this.#empty(number);
    }
    if (line.length > MAX_PARAM_CHARS) this.#tooLong();
    if (number > this.#maxLines)
      throw new JobFileError(
        FIELD,
        `${this.#name} has more than ${this.#maxLines.toLocaleString("en-US")} lines, the most tasks an array may have (one task per line)`,
      );
    this.#lines.push(line);
  }

  #empty(number: number): never {
    throw new JobFileError(
      FIELD,
      `${this.#name}: line ${number} is empty (each line is one task's parameter)`,
    );
  }

  #tooLong(): never {
    throw new JobFileError(
      FIELD,
      `${this.#name} line ${this.#lines.length + 1}: longer than ${MAX_PARAM_CHARS} characters`,
    );
  }
}

function formatBytes(bytes: number): string {
  return bytes % (1024 * 1024) === 0 ? `${bytes / 1024 / 1024} MiB` : `${bytes} bytes`;
}

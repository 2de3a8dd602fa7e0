// Where a field of a job file (or workflow file) is in its text: the line and column of its key
// (of the item, in a list), or, for a field the text does not have (a required one left out), of
// the nearest enclosing key there is. What turns a JobFileError into the message users read,
// wherever the text is at hand: the server's 400 for a file sent as text, and the CLI.

import { isMap, isScalar, isSeq, LineCounter, type Node, parseDocument } from "yaml";
import { type FieldPath, JobFileError, type TextPlace } from "./jobfile-error.ts";

/**
 * The place of `path` in `text`; null when the text is not a document of YAML (or is empty), or,
 * `exact`, when the text does not have the field itself.
 */
export function placeOfField(text: string, path: FieldPath, exact = false): TextPlace | null {
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: false });
  if (doc.errors.length > 0) return null;
  let node: unknown = doc.contents;
  if (!isNodeWithRange(node)) return null;
  let offset = node.range[0];
  let found = 0;
  for (const part of path) {
    let next: unknown;
    if (isMap(node)) {
      const pair = node.items.find((item) => isScalar(item.key) && String(item.key.value) === String(part));
      if (!pair || !isNodeWithRange(pair.key)) break;
      offset = pair.key.range[0];
      next = pair.value;
    } else if (isSeq(node) && typeof part === "number") {
      const item = node.items[part];
      if (!isNodeWithRange(item)) break;
      offset = item.range[0];
      next = item;
    } else break;
    node = next;
    found++;
  }
  if (exact && found < path.length) return null;
  const { line, col } = lines.linePos(offset);
  return { line, column: col };
}

function isNodeWithRange(value: unknown): value is Node & { range: [number, number, number] } {
  return (
    value !== null &&
    typeof value === "object" &&
    "range" in value &&
    Array.isArray((value as { range?: unknown }).range)
  );
}

/** The error with the place of its field in `text` (as it was when it has one already, or none is found). */
export function placeJobFileError(error: JobFileError, text: string): JobFileError {
  if (error.place) return error;
  const place = placeOfField(text, error.path);
  return place ? new JobFileError(error.path, error.problem, place) : error;
}

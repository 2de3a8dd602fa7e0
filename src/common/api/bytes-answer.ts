// A route's answer of bytes (a file, a log, an archive) with what it is.

import { fileBytes } from "./agent-files.ts";

/** An answer of bytes of this content type: for a route's response schema, and so for the OpenAPI document. */
export function binary(description: string, contentType = "application/octet-stream") {
  return { description, content: { [contentType]: { schema: fileBytes } } };
}

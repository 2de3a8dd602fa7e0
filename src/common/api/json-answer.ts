// A route's JSON answer with what it is.

import type { z } from "zod";

/** A JSON answer with what it is: for a route's response schema, and so for the OpenAPI document. */
export function json<Schema extends z.ZodType>(schema: Schema, description: string) {
  return { description, content: { "application/json": { schema } } };
}

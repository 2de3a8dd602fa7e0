// The error answer every route gives, and the codes it gives it with.

import { z } from "zod";
import { json } from "./json-answer.ts";

export const errorSchema = z
  .object({
    error: z.object({
      code: z.string().meta({ description: "invalid, unauthorized, not_found, conflict, internal, ..." }),
      message: z.string().meta({ description: "one line, naming the field when there is one" }),
      field: z.string().optional().meta({ description: "the field at fault (400)" }),
      line: z.int().optional().meta({
        description:
          "a job or workflow file sent as text (YAML or JSON): the line of the field's key (400), from 1",
      }),
      column: z.int().optional().meta({ description: "with line: the column of the field's key, from 1" }),
    }),
  })
  .meta({ id: "Error" });
export type ErrorAnswer = z.infer<typeof errorSchema>;

const ERROR_DESCRIPTIONS = {
  400: "a parameter, the query or the body is not valid: the message names the field",
  401: "missing, wrong, revoked or expired bearer token",
  403: "the token's role may not do this (a reader changes nothing; only admins manage hosts and tokens)",
  404: "no such job, task, host or file (or a job of another user; on agents' routes, an attempt not on the calling host)",
  409: "the request conflicts with the current state (for example an attempt that is no longer current)",
  413: "a file or the body is larger than the server allows",
  416: "the Range asked for starts past the file's end (Content-Range gives the file's size: bytes */SIZE)",
  507: "the store's or the blob folder's file system is full: nothing of the request was kept; the message names the path where space must be freed, and the same request succeeds once it is",
  501: "not available on this server's store (a backup of a PostgreSQL store: use pg_dump)",
  429: "too much from this token: submits over its rate (the message and Retry-After say when to try again), or more event streams than it may hold at once (the message names the limit)",
} as const;

/** The error answers a route may give, for its response schema (and so for the OpenAPI document). */
export function errors<const Code extends keyof typeof ERROR_DESCRIPTIONS>(...codes: Code[]) {
  const answers = {} as Record<Code, ReturnType<typeof json<typeof errorSchema>>>;
  for (const code of codes) answers[code] = json(errorSchema, ERROR_DESCRIPTIONS[code]);
  return answers;
}

// What the agents' file routes take and answer: bytes streamed, and what was written.

import type { Readable } from "node:stream";
import { z } from "zod";

export const bytesWrittenSchema = z.object({ bytes: z.int() });

export const checkpointCommittedSchema = z.object({
  generation: z.int(),
  bytes: z.int(),
  previous: z.int().nullable(),
});

/** A file's bytes, streamed both ways (never whole in memory): a Readable on the server. */
export const fileBytes = z
  .custom<Readable>((value) => typeof (value as Readable | null)?.pipe === "function")
  .meta({ type: "string", format: "binary" });

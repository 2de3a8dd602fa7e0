// The server's health: whether it can serve (its store answers), whether it leads, and its term.

import { z } from "zod";

export const healthSchema = z.object({
  /** False while the server's store does not answer (answered 503 then, with `reason`). */
  ok: z.boolean(),
  role: z.enum(["leader", "standby"]),
  /** The leader's URL when known. */
  leader: z.string().nullable(),
  /** The leadership term: it grows with every start (and, with HA, every election). */
  term: z.int(),
  /** Why not ok, e.g. "store unavailable: read ECONNRESET"; absent when ok. */
  reason: z.string().optional(),
});
export type Health = z.infer<typeof healthSchema>;

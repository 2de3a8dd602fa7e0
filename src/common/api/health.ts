// The server's health: whether it leads, and its term.

import { z } from "zod";

export const healthSchema = z.object({
  ok: z.boolean(),
  role: z.enum(["leader", "standby"]),
  /** The leader's URL when known. */
  leader: z.string().nullable(),
  /** The leadership term: it grows with every start (and, with HA, every election). */
  term: z.int(),
});
export type Health = z.infer<typeof healthSchema>;

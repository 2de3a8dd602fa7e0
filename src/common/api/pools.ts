// A batch-backed pool as the API shows it.

import { z } from "zod";

export const poolSchema = z
  .object({
    name: z.string(),
    driver: z.string(),
    state: z.enum(["ok", "unavailable"]),
    reason: z
      .string()
      .nullable()
      .meta({ description: "why the pool is unavailable: the batch system's message" }),
    pilots: z.object({ pending: z.int(), running: z.int(), ending: z.int() }),
  })
  .meta({ id: "Pool" });
export type Pool = z.infer<typeof poolSchema>;

// Tokens as the API shows them, and who a token is.

import { z } from "zod";
import { isoTime } from "./iso-time.ts";

export const ROLES = ["admin", "user", "reader"] as const;

export const tokenSchema = z
  .object({
    id: z.string().meta({ description: "the token's public id: what list shows and revoke takes" }),
    kind: z.enum(["api", "join", "host"]),
    user: z
      .string()
      .meta({ description: "an API token's user; a host credential's host; a join token's maker" }),
    role: z.enum(ROLES).nullable(),
    pool: z.string().nullable().meta({ description: "a join token's pool (null: any pool)" }),
    state: z.enum(["active", "revoked", "expired"]),
    createdAt: isoTime,
    createdBy: z.string(),
    expiresAt: isoTime.nullable(),
    revokedAt: isoTime.nullable(),
    group: z.string().nullable().meta({ description: "an API token's user's group (null: none)" }),
    qos: z.array(z.string()).nullable().meta({
      description: "the QoS tiers an API token's jobs may ask for (null: normal only; an admin's: any)",
    }),
  })
  .meta({ id: "Token" });
export type TokenView = z.infer<typeof tokenSchema>;

export const newTokenSchema = tokenSchema
  .extend({ token: z.string().meta({ description: "the token itself: shown this once, never again" }) })
  .meta({ id: "NewToken" });
export type NewTokenView = z.infer<typeof newTokenSchema>;

export const whoamiSchema = z
  .object({
    user: z.string(),
    role: z.enum(ROLES),
    tokenId: z.string().nullable().meta({ description: "null for the admin token given at server start" }),
    expiresAt: isoTime.nullable(),
    group: z.string().nullable().meta({ description: "the token's group (null: none)" }),
    qos: z
      .array(z.string())
      .nullable()
      .meta({ description: "the QoS tiers the token's jobs may ask for (null: any, an admin)" }),
  })
  .meta({ id: "WhoAmI" });
export type WhoAmI = z.infer<typeof whoamiSchema>;

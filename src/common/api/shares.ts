// The fair-share tree as the API shows it (`steward share`).

import { z } from "zod";

export const shareLineSchema = z
  .object({
    kind: z.enum(["account", "user"]),
    name: z.string(),
    parent: z.string().nullable().meta({ description: "the account it is in; null for the root" }),
    depth: z.int().meta({ description: "0 for the root, 1 under it, and so on" }),
    rawShares: z
      .number()
      .meta({ description: "shares as the shares file gives them (1 for a user it names nowhere)" }),
    normShares: z
      .number()
      .meta({ description: "its fraction of the whole grid: levelShares times the parent's" }),
    usage: z.number().meta({
      description: "cpu-seconds used, decayed with the half-life (running attempts count as they run)",
    }),
    normUsage: z.number().meta({ description: "its fraction of every user's usage" }),
    levelShares: z.number().meta({ description: "s: its shares over its and its siblings'" }),
    levelUsage: z
      .number()
      .meta({ description: "u: its usage over its and its siblings' (0 when none used anything)" }),
    levelFactor: z.number().meta({ description: "2^(-u/s): siblings are ranked by it, highest first" }),
    factor: z.number().nullable().meta({
      description:
        "a user's fair-share factor, its rank over every user (1 for the first; a user who used nothing is first): the waiting user with the highest goes first; null for an account",
    }),
  })
  .meta({ id: "ShareLine" });

export const sharesSchema = z
  .object({
    at: z.iso.datetime().meta({ description: "when the figures were taken" }),
    halfLifeSeconds: z
      .number()
      .meta({ description: "usage counts half as much after this long (--fair-share-half-life)" }),
    lines: z.array(shareLineSchema).meta({
      description:
        "the tree, the root first, each account followed by its users and sub-accounts; a user token gets its own line and the accounts above it",
    }),
  })
  .meta({ id: "Shares" });

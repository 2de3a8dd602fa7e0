// A host as the API shows it, and the answer to its removal.

import { z } from "zod";
import { HOST_STATES } from "../model/states.ts";
import { hostFacts } from "../protocol/messages.ts";
import { isoTime } from "./iso-time.ts";

/** The host facts as agents send them (src/common/protocol/messages.ts): one schema for both. */
export const hostFactsSchema = hostFacts;

export const hostSchema = z
  .object({
    name: z.string(),
    pool: z.string(),
    state: z.enum(HOST_STATES),
    connected: z.boolean().meta({ description: "whether its agent is attached now" }),
    slots: z.int(),
    slotsFree: z.int(),
    liveAttempts: z.int().meta({
      description:
        "attempts the host runs or is stopping now (0 once a draining host's work has ended or moved)",
    }),
    labels: z.record(z.string(), z.string()),
    facts: hostFactsSchema,
    lastSeen: isoTime,
    endsAt: isoTime.nullable().meta({
      description: "a pilot's walltime end (host.secondsLeft counts down to it); null for other hosts",
    }),
  })
  .meta({ id: "Host" });
export type Host = z.infer<typeof hostSchema>;

export const hostRemovedSchema = z
  .object({
    name: z.string(),
    removed: z.literal(true),
    revokedCredentials: z.array(z.string()).meta({ description: "the ids of the host credentials revoked" }),
  })
  .meta({ id: "HostRemoved" });
export type HostRemoved = z.infer<typeof hostRemovedSchema>;

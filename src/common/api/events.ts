// A job's events as the API sends them: stored history, and the progress of the event stream.

import { z } from "zod";
import { EVENT_DATA, EVENT_KINDS } from "../model/events.ts";
import { JOB_STATES } from "../model/states.ts";
import { isoTime } from "./iso-time.ts";
import { countsSchema } from "./task-states.ts";

// Loose objects: an event's shape is the intersection of its head and its kind, and neither may
// forbid the other's fields.
const eventHead = z.looseObject({
  id: z.int().meta({ description: "increasing in commit order; the id of the server-sent event" }),
  at: isoTime,
  message: z.string().meta({ description: "what happened, in words (as `steward show` prints it)" }),
});

/** One object per kind of event: `kind` names it, `data` holds the numbers and names behind the message. */
const [firstKind, ...otherKinds] = EVENT_KINDS.map((kind) =>
  z.looseObject({ kind: z.literal(kind), data: EVENT_DATA[kind] }).meta({ id: `Event.${kind}` }),
);

const eventKinds = z.discriminatedUnion("kind", [firstKind, ...otherKinds]).meta({
  discriminator: {
    propertyName: "kind",
    mapping: Object.fromEntries(EVENT_KINDS.map((kind) => [kind, `#/components/schemas/Event.${kind}`])),
  },
});

/** An event stored by an earlier version, whose kind or data this version does not know. */
const earlierEvent = z.looseObject({ kind: z.string(), data: z.record(z.string(), z.unknown()) }).meta({
  id: "Event.earlier",
  description: "an event an earlier version stored, of a kind or with data this version does not know",
});

export const eventSchema = z
  .intersection(eventHead, z.union([eventKinds, earlierEvent]))
  .meta({ id: "Event", description: "one event of a job's history: its kind, its data, and the message" });
export type Event = z.infer<typeof eventSchema>;

/** What `GET /api/v1/events` sends as the data of each server-sent event. */
export const streamEventSchema = z
  .intersection(z.looseObject({ jobId: z.string() }), eventSchema)
  .meta({ id: "JobEvent", description: "an Event with the id of its job" });
export type StreamEvent = z.infer<typeof streamEventSchema>;

/** What `GET /api/v1/events` sends as `event: progress`: a job's task counts (not stored). */
export const progressEventSchema = z
  .object({ jobId: z.string(), state: z.enum(JOB_STATES), taskCount: z.int(), counts: countsSchema })
  .meta({ id: "JobProgress" });
export type ProgressEvent = z.infer<typeof progressEventSchema>;

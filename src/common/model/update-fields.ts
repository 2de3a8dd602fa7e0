// The job file's fields an update may change (job-update.ts), and a change in words: apart from
// the update's checks, so that the event history (events.ts) does not load the job file's schema.

/** The fields an update may change, as the job file names them. */
export const UPDATE_FIELDS = [
  "priority",
  "qos",
  "requirements",
  "rank",
  "resources.cpus",
  "resources.memoryMb",
  "timeLimitSeconds",
  "array.parallel",
] as const;
export type UpdateField = (typeof UPDATE_FIELDS)[number];

/** One field an update changed, with its value before and after (null: none). */
export interface UpdateChange {
  field: UpdateField;
  from: number | string | null;
  to: number | string | null;
}

/** One change in words: `priority 0 -> 5`, `requirements none -> host.name == "b"`. */
export function renderUpdateChange(change: UpdateChange): string {
  const shown = (value: number | string | null) => (value === null ? "none" : String(value));
  return `${change.field} ${shown(change.from)} -> ${shown(change.to)}`;
}

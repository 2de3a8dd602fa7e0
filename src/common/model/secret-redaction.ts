// A text (an error's message, an S3 server's answer: its SignatureDoesNotMatch names the access key
// id) with the secret fields of the credentials a transfer used put out of sight, so that the
// reason an attempt ended, which the server stores and shows, never holds them. No I/O.

import { HIDDEN_FIELDS, type SecretValue } from "./secret-value.ts";

/** What stands where a secret field was (as the daemons' settings show theirs: daemons/redact-secrets.ts). */
export const REDACTED = "<redacted>";

/** `text` with every occurrence of a hidden field of `values` replaced by REDACTED. */
export function redactSecretValues(text: string, values: readonly SecretValue[]): string {
  const hidden = values
    .flatMap((value) => HIDDEN_FIELDS.map((name) => value[name]))
    .filter((each): each is string => each !== undefined && each !== "")
    // The longest first: a field that holds another is hidden whole.
    .sort((a, b) => b.length - a.length);
  let redacted = text;
  for (const each of hidden) redacted = redacted.split(each).join(REDACTED);
  return redacted;
}

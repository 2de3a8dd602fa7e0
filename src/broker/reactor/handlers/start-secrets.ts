// The secrets an attempt's start message carries: the values of the owner's secrets its job's s3:
// transfers name by `credentials` (model/job-credentials.ts), looked up as the attempt starts, so a
// secret set anew is the one sent. Nowhere else: the job's record and its events hold the names.

import { credentialNames } from "../../../common/model/job-credentials.ts";
import type { SecretValue } from "../../../common/model/secret-value.ts";
import type { StartMessage } from "../../../common/protocol/messages.ts";
import type { JobEntry } from "../../state/job-entry.ts";
import type { SecretRegistry } from "../../state/secret-registry.ts";

/**
 * `message` with the values of the secrets its job names (those the owner still has); `message`
 * itself when the job names none.
 */
export function withStartSecrets<M extends StartMessage>(
  message: M,
  job: JobEntry,
  secrets: Pick<SecretRegistry, "get">,
): M {
  const names = credentialNames(job.record.spec);
  if (names.length === 0) return message;
  const values: Record<string, SecretValue> = {};
  for (const name of names) {
    const secret = secrets.get(job.record.owner, name);
    if (secret) values[name] = secret.value;
  }
  return { ...message, secrets: values };
}

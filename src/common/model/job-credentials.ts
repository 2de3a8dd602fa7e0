// A job file's `credentials: NAME` on an s3: input (`{url, credentials}`) or output (`{path, to,
// credentials}`): the name of the submitter's secret whose S3 credentials sign that transfer. The
// job holds the name only; the broker checks at submit that the submitter has such a secret, and
// puts its value in the start message alone (reactor/handlers/attempts.ts). No I/O.

import { z } from "zod";
import { SECRET_NAME } from "./secret-name.ts";

/** The schema of the field, described for the input or output it is on. */
export function credentialsField(description: string) {
  return z
    .string()
    .regex(SECRET_NAME, "must be a secret's name: 1 to 64 letters, digits, '_', '.' and '-'")
    .optional()
    .meta({ description, examples: ["climate-readers"] });
}

/** One `credentials` of a job file: the field that names it and the secret's name. */
export interface NamedCredentials {
  field: string;
  name: string;
}

/** What of a job file names credentials: its inputs and outputs. */
interface CredentialsJob {
  inputs: readonly (string | { credentials?: string })[];
  outputs: readonly (string | { credentials?: string })[];
}

/** Every `credentials` of the job file, inputs first, in order. */
export function namedCredentials(spec: CredentialsJob): NamedCredentials[] {
  const named: NamedCredentials[] = [];
  const collect = (entries: CredentialsJob["inputs"], list: string) =>
    entries.forEach((entry, index) => {
      if (typeof entry !== "string" && entry.credentials !== undefined)
        named.push({ field: `${list}[${index}].credentials`, name: entry.credentials });
    });
  collect(spec.inputs, "inputs");
  collect(spec.outputs, "outputs");
  return named;
}

/** The names of the secrets the job file names, each once. */
export function credentialNames(spec: CredentialsJob): string[] {
  return [...new Set(namedCredentials(spec).map((each) => each.name))];
}

/**
 * The first `credentials` that names no secret of the submitter's (`has` tells whether they have
 * one of a name): its field and why; null when every one does.
 */
export function missingCredentials(
  spec: CredentialsJob,
  has: (name: string) => boolean,
): (NamedCredentials & { message: string }) | null {
  const missing = namedCredentials(spec).find((each) => !has(each.name));
  if (missing === undefined) return null;
  return {
    ...missing,
    message: `you have no secret ${missing.name} (steward secret set ${missing.name})`,
  };
}

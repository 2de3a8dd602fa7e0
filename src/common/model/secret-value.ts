// What a secret holds: the fields of S3 credentials, as `steward secret set` reads them (a JSON
// object on its standard input, or `--from-env` from the caller's AWS_* variables) and as the agent
// signs a job's S3 transfers with them (agent/s3/s3-settings.ts). The key pair is required; the
// session token goes with it; region and endpoint, when given, come before the agent's own. No I/O.

import { z } from "zod";

/** The longest a field may be (a session token runs to a few kilobytes). */
export const SECRET_FIELD_MAX_CHARS = 8192;

const field = (description: string) => z.string().min(1).max(SECRET_FIELD_MAX_CHARS).meta({ description });

export const secretValueSchema = z
  .strictObject({
    accessKeyId: field("the access key id"),
    secretAccessKey: field("the secret access key"),
    sessionToken: field("the session token of temporary credentials").optional(),
    region: field("the region the requests are signed for (absent: the agent's, else us-east-1)").optional(),
    endpoint: field(
      "an S3-compatible store's endpoint, `http(s)://host:port` (absent: the agent's, else AWS's own)",
    ).optional(),
  })
  .meta({ id: "SecretValue" });

/** A secret's fields. */
export type SecretValue = z.output<typeof secretValueSchema>;

/** The fields that are secret (a region or an endpoint is not): what redaction hides. */
export const HIDDEN_FIELDS = ["accessKeyId", "secretAccessKey", "sessionToken"] as const;

/** `value` as a secret's fields, or what is wrong with it (naming the field). */
export function parseSecretValue(value: unknown): { value: SecretValue } | { problem: string } {
  const parsed = secretValueSchema.safeParse(value);
  if (parsed.success) return { value: parsed.data };
  const issue = parsed.error.issues[0];
  const where = issue.path.length > 0 ? issue.path.join(".") : "the value";
  return { problem: `${where}: ${issue.message}` };
}

/** The AWS variables each field is read from by `--from-env`, first first (as the AWS CLI reads them). */
const VARIABLES: Record<keyof SecretValue, readonly string[]> = {
  accessKeyId: ["AWS_ACCESS_KEY_ID"],
  secretAccessKey: ["AWS_SECRET_ACCESS_KEY"],
  sessionToken: ["AWS_SESSION_TOKEN"],
  region: ["AWS_REGION", "AWS_DEFAULT_REGION"],
  endpoint: ["AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT_URL"],
};

/** The fields an environment's AWS variables give (empty ones are absent), unchecked: parseSecretValue checks. */
export function secretValueFromEnvironment(
  env: Readonly<Record<string, string | undefined>>,
): Record<string, string> {
  const value: Record<string, string> = {};
  for (const [name, variables] of Object.entries(VARIABLES)) {
    const found = variables
      .map((variable) => env[variable])
      .find((each) => each !== undefined && each !== "");
    if (found !== undefined) value[name] = found;
  }
  return value;
}

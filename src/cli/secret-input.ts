// The value `steward secret set` sends: a JSON object of the fields read from standard input, or
// (--from-env) the caller's AWS_* variables, checked here as the server checks it
// (model/secret-value.ts), so that a mistake is told before anything is sent. A problem never
// echoes the value.

import { CliError } from "../common/command-line/cli-error.ts";
import {
  parseSecretValue,
  type SecretValue,
  secretValueFromEnvironment,
} from "../common/model/secret-value.ts";

/** The value of a JSON text (standard input's); a CliError (exit 2) naming what is wrong. */
export function secretValueOfText(text: string): SecretValue {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new CliError(
      'standard input is not JSON: give an object such as {"accessKeyId": "...", "secretAccessKey": "..."}, or --from-env',
      2,
    );
  }
  return checked(parsed, "standard input");
}

/** The value of an environment's AWS_* variables; a CliError (exit 2) naming what is missing. */
export function secretValueOfEnvironment(env: Readonly<Record<string, string | undefined>>): SecretValue {
  const value = secretValueFromEnvironment(env);
  if (value.accessKeyId === undefined || value.secretAccessKey === undefined)
    throw new CliError("--from-env needs AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY set", 2);
  return checked(value, "the environment");
}

function checked(value: unknown, where: string): SecretValue {
  const result = parseSecretValue(value);
  if ("problem" in result) throw new CliError(`${where}: ${result.problem}`, 2);
  return result.value;
}

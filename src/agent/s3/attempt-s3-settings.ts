// The S3 settings of one attempt's transfers, each resolved at its first need (a job without s3:
// transfers reads no file). A transfer whose job entry names `credentials` is signed with that
// secret's key pair from the start message, in place of the agent's own (the pair and its session
// token are the secret's alone; its region and endpoint when it has them, else the agent's). One
// that names a secret the start does not hold (removed since the submit, or an attempt adopted
// after an agent restart: start.json never holds secrets) fails, rather than be signed as the agent.

import type { SecretValue } from "../../common/model/secret-value.ts";
import type { AwsValues } from "./aws-config.ts";
import { resolveS3Settings, type S3Settings } from "./s3-settings.ts";

/** The settings of a transfer that names `credentials` (absent: the agent's own). */
export type TransferS3Settings = (credentials?: string) => S3Settings;

export function attemptS3Settings(
  secrets: Readonly<Record<string, SecretValue>> | undefined,
  own: () => AwsValues[],
): TransferS3Settings {
  let ownValues: AwsValues[] | undefined;
  const ownSources = () => {
    ownValues ??= own();
    return ownValues;
  };
  const resolved = new Map<string, S3Settings>();
  return (credentials) => {
    const key = credentials ?? "";
    const known = resolved.get(key);
    if (known) return known;
    let settings: S3Settings;
    if (credentials === undefined) settings = resolveS3Settings(ownSources());
    else {
      const secret =
        secrets !== undefined && Object.hasOwn(secrets, credentials) ? secrets[credentials] : undefined;
      if (secret === undefined)
        throw new Error(
          `the secret ${credentials} (credentials) is not in the attempt's start: it was removed, or the agent restarted`,
        );
      const { accessKeyId, secretAccessKey, sessionToken, region, endpoint } = secret;
      const pair: AwsValues = { accessKeyId, secretAccessKey, ...(sessionToken ? { sessionToken } : {}) };
      // The agent's sources lend a region and an endpoint only, never their pair.
      const lent = ownSources().map(({ region: r, endpoint: e }) => ({
        ...(r !== undefined ? { region: r } : {}),
        ...(e !== undefined ? { endpoint: e } : {}),
      }));
      settings = resolveS3Settings([
        { ...pair, ...(region ? { region } : {}), ...(endpoint ? { endpoint } : {}) },
        ...lent,
      ]);
    }
    resolved.set(key, settings);
    return settings;
  };
}

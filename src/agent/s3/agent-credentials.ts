// The S3 settings an agent has of its own, read when a job needs them (so that rotated
// credentials are taken up without a restart): its environment (AWS_ACCESS_KEY_ID,
// AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION or AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_S3 or
// AWS_ENDPOINT_URL), then its profile (AWS_PROFILE, else `default`) in the shared files
// (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials; AWS_CONFIG_FILE, else ~/.aws/config, of
// the agent's own account). A job's secret, when it names one, comes before both (s3-settings.ts).

import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { join } from "node:path";
import { type AwsValues, profileValues } from "./aws-config.ts";
import { environmentValues } from "./s3-settings.ts";

/** A file's text, or null when it cannot be read (absent, a folder, not the agent's to read). */
function readText(path: string): string | null {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return null;
  }
}

/** The agent's own sources, environment first, then its profile in the shared files. */
export function agentAwsValues(
  env: Readonly<Record<string, string | undefined>> = process.env,
  home: string = homedir(),
): AwsValues[] {
  const credentialsFile = env.AWS_SHARED_CREDENTIALS_FILE || join(home, ".aws", "credentials");
  const configFile = env.AWS_CONFIG_FILE || join(home, ".aws", "config");
  const profile = env.AWS_PROFILE || "default";
  return [environmentValues(env), profileValues(readText(credentialsFile), readText(configFile), profile)];
}

// The AWS shared files as the AWS CLI and SDKs read them, the little of them an agent needs: the
// credentials file (`[NAME]` sections) and the config file (`[default]`, `[profile NAME]`), each
// `key = value` lines, `#` and `;` comments. A profile's values are the credentials file's, then
// the config file's for keys the first lacks. Indented lines (a nested `s3 =` block) are another
// service's settings and skipped. A job's secret (a credentials-file text) is read the same way.
// Pure: the texts are handed in.

/** The keys of a profile that an S3 request takes. */
export interface AwsValues {
  accessKeyId?: string;
  secretAccessKey?: string;
  sessionToken?: string;
  region?: string;
  endpoint?: string;
}

/** The sections of an INI text, each a map of its keys (lower-cased) to their values. */
export function parseIni(text: string): Map<string, Map<string, string>> {
  const sections = new Map<string, Map<string, string>>();
  let current: Map<string, string> | null = null;
  for (const raw of text.split(/\r?\n/)) {
    if (/^\s/.test(raw) && current !== null && raw.trim() !== "") continue;
    const line = raw.trim();
    if (line === "" || line.startsWith("#") || line.startsWith(";")) continue;
    const header = /^\[\s*([^\]]+?)\s*\]$/.exec(line);
    if (header) {
      const name = header[1].replace(/\s+/g, " ");
      current = sections.get(name) ?? new Map();
      sections.set(name, current);
      continue;
    }
    const equals = line.indexOf("=");
    if (current === null || equals <= 0) continue;
    const key = line.slice(0, equals).trim().toLowerCase();
    const value = line.slice(equals + 1).trim();
    current.set(key, value);
  }
  return sections;
}

/** The S3 values of one section's keys. */
export function awsValuesOf(section: ReadonlyMap<string, string> | undefined): AwsValues {
  const values: AwsValues = {};
  const take = (name: keyof AwsValues, key: string) => {
    const value = section?.get(key);
    if (value !== undefined && value !== "") values[name] = value;
  };
  take("accessKeyId", "aws_access_key_id");
  take("secretAccessKey", "aws_secret_access_key");
  take("sessionToken", "aws_session_token");
  take("region", "region");
  take("endpoint", "endpoint_url");
  return values;
}

/**
 * A profile's values from the two files' texts (null: no such file): the credentials file's
 * section `[profile]`, then the config file's `[default]` or `[profile NAME]` for the keys the first
 * does not give.
 */
export function profileValues(
  credentialsText: string | null,
  configText: string | null,
  profile: string,
): AwsValues {
  const fromCredentials = awsValuesOf(parseIni(credentialsText ?? "").get(profile));
  const config = parseIni(configText ?? "");
  const section = profile === "default" ? config.get("default") : config.get(`profile ${profile}`);
  return { ...awsValuesOf(section), ...fromCredentials };
}

/**
 * A secret's text (a credentials-file style text): its `[default]` section, or the keys before any
 * section header when it has none.
 */
export function secretValues(text: string): AwsValues {
  const sections = parseIni(`[${SECRET_TOP}]\n${text}`);
  const top = awsValuesOf(sections.get(SECRET_TOP));
  const fallback = awsValuesOf(sections.get("default"));
  return { ...fallback, ...top };
}

/** The name the keys before a secret's first section are read under. */
const SECRET_TOP = "\u0000top";

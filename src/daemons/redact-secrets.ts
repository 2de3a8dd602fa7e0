// Secrets in settings' values, hidden before a value is printed (steward config, the server's start
// lines, error messages): the password of every URL in the text (user:PASSWORD@, in a
// comma-separated list too) and the value of every query parameter that names a secret
// (?password=, &sslpassword=, ?token=, ...).

/** What a secret is shown as. */
export const REDACTED = "<redacted>";

/** Query parameters whose value is a secret (compared without case). */
const SECRET_PARAMETERS = [
  "password",
  "passwd",
  "pwd",
  "sslpassword",
  "sslkey",
  "token",
  "access_token",
  "secret",
  "api_key",
  "apikey",
];

const USERINFO_PASSWORD = /([a-z][a-z0-9+.-]*:\/\/[^:@/\s,]*):[^@/\s]*@/gi;
/** A secret query value ends at &, #, a space, or a comma that starts the list's next URL. */
const SECRET_QUERY = new RegExp(
  `([?&](?:${SECRET_PARAMETERS.join("|")})=)(?:(?!,[a-z][a-z0-9+.-]*://)[^&#\\s])*`,
  "gi",
);

/** The text with every URL password and secret query value replaced by `mark`. */
export function redactSecrets(text: string, mark: string = REDACTED): string {
  return text.replace(USERINFO_PASSWORD, `$1:${mark}@`).replace(SECRET_QUERY, `$1${mark}`);
}

/** Whether a setting's value is or holds a secret: a token flag's value (not a -file's), or a URL with a password. */
export function holdsSecret(key: string, value: unknown): boolean {
  if (value === undefined || value === null || value === false) return false;
  if (/token/.test(key) && !key.endsWith("-file")) return true;
  const texts = Array.isArray(value) ? value : [value];
  return texts.some((text) => typeof text === "string" && redactSecrets(text) !== text);
}

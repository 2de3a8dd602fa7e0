// A secret's name, as `steward secret set NAME`, `PUT /api/v1/secrets/{name}` and a job file's
// `credentials: NAME` give it: 1 to 64 letters, digits, `_`, `.` and `-`. Names are a user's own:
// two users may each have a secret of one name (model/records.ts SecretRecord). No I/O.

/** What a secret's name may be. */
export const SECRET_NAME = /^[A-Za-z0-9_.-]{1,64}$/;

/** What is wrong with `name` as a secret's name, or null. */
export function secretNameProblem(name: string): string | null {
  if (name.length === 0) return "is empty";
  if (name.length > 64) return `is ${name.length} characters long: at most 64`;
  if (!SECRET_NAME.test(name)) return "may hold only letters, digits, '_', '.' and '-'";
  return null;
}

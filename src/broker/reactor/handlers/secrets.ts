// A user's secrets set and removed (`steward secret set|rm`), each committed before it is answered:
// a job submitted after `set` answered finds it; one started after `rm` answered does not get it.

import type { SecretListing, SecretRecord } from "../../../common/model/records.ts";
import type { SecretValue } from "../../../common/model/secret-value.ts";
import { NotFoundError } from "../errors.ts";
import type { Step } from "../step.ts";

/** A secret set: what lists show of it, and whether it is new (else it replaced one of that name). */
export interface SecretSet {
  secret: SecretListing;
  created: boolean;
}

/** The listing of a secret: everything but its value. */
export function secretListing(record: SecretRecord): SecretListing {
  return { name: record.name, createdAt: record.createdAt, updatedAt: record.updatedAt };
}

/** Sets `owner`'s secret `name` to `value`, new or in place of theirs of that name (kept its createdAt). */
export function setSecret(step: Step, owner: string, name: string, value: SecretValue): SecretSet {
  const before = step.state.secrets.get(owner, name);
  const record: SecretRecord = {
    owner,
    name,
    value,
    createdAt: before?.createdAt ?? step.now,
    updatedAt: step.now,
  };
  step.write.setSecret(owner, name, record);
  return { secret: secretListing(record), created: before === undefined };
}

/** Removes `owner`'s secret `name` and answers what lists showed of it; NotFoundError when they have none of that name. */
export function removeSecret(step: Step, owner: string, name: string): SecretListing {
  const record = step.state.secrets.get(owner, name);
  if (!record) throw new NotFoundError(`no secret ${name}`);
  step.write.setSecret(owner, name, null);
  return secretListing(record);
}

// Users' secrets, by owner then name: what `credentials: NAME` of a job's owner resolves to at
// submit (does it exist) and in an attempt's start message (its value). Pure.

import type { SecretRecord } from "../../common/model/records.ts";

export class SecretRegistry {
  readonly #byOwner = new Map<string, Map<string, SecretRecord>>();

  put(record: SecretRecord): void {
    let own = this.#byOwner.get(record.owner);
    if (!own) {
      own = new Map();
      this.#byOwner.set(record.owner, own);
    }
    own.set(record.name, record);
  }

  delete(owner: string, name: string): void {
    const own = this.#byOwner.get(owner);
    own?.delete(name);
    if (own?.size === 0) this.#byOwner.delete(owner);
  }

  /** Puts `record` as the owner's secret `name`, or (null) deletes theirs of that name. */
  set(owner: string, name: string, record: SecretRecord | null): void {
    if (record) this.put(record);
    else this.delete(owner, name);
  }

  get(owner: string, name: string): SecretRecord | undefined {
    return this.#byOwner.get(owner)?.get(name);
  }

  /** The owner's secrets, by name. */
  of(owner: string): SecretRecord[] {
    return [...(this.#byOwner.get(owner)?.values() ?? [])].sort((a, b) =>
      a.name < b.name ? -1 : a.name > b.name ? 1 : 0,
    );
  }
}

// The tokens the server gave out, by id, and what a presented one is worth now: an API token's
// user and role, a join token's pool, a host credential's host. Pure: the clock is passed in;
// comparisons of secrets are constant-time.

import type { Principal, Refusal, TokenKind, TokenRecord } from "../../common/model/records.ts";
import { parseToken, safeEqual, secretHash } from "../../common/model/tokens.ts";

export class TokenRegistry {
  readonly #tokens = new Map<string, TokenRecord>();
  /** Host credentials by host, then id (in the order of #tokens): a hello of 10,000 hosts' looks at its own. */
  readonly #hostCredentials = new Map<string, Map<string, TokenRecord>>();
  /** Each user's group, made when first asked after a change (every pass may ask). */
  #groups: Map<string, string> | null = null;

  put(record: TokenRecord): void {
    const previous = this.#tokens.get(record.id);
    if (previous?.kind === "host" && (record.kind !== "host" || previous.subject !== record.subject))
      this.#hostCredentials.get(previous.subject)?.delete(previous.id);
    this.#tokens.set(record.id, record);
    if (record.kind === "host") {
      let credentials = this.#hostCredentials.get(record.subject);
      if (!credentials) {
        credentials = new Map();
        this.#hostCredentials.set(record.subject, credentials);
      }
      credentials.set(record.id, record);
    }
    if (record.kind === "api") this.#groups = null;
  }

  /** Forgets a token put (one whose put is taken back: reactor/writes.ts). */
  delete(id: string): void {
    const record = this.#tokens.get(id);
    if (!record) return;
    this.#tokens.delete(id);
    if (record.kind === "host") this.#hostCredentials.get(record.subject)?.delete(id);
    if (record.kind === "api") this.#groups = null;
  }

  get(id: string): TokenRecord | undefined {
    return this.#tokens.get(id);
  }

  /** Tokens of a kind, oldest first. */
  list(kind?: TokenKind): TokenRecord[] {
    const all = [...this.#tokens.values()];
    return (kind ? all.filter((each) => each.kind === kind) : all).sort(
      (a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : 1),
    );
  }

  /**
   * The stored token of `kind` that `text` is, checked against its hash; a Refusal when it is
   * revoked or expired (or, for a host credential, its join token is); null when no stored token
   * of that kind has this text.
   */
  match(text: string, kind: TokenKind, now: number): TokenRecord | Refusal | null {
    const parsed = parseToken(text);
    if (!parsed || parsed.kind !== kind) return null;
    const record = this.#tokens.get(parsed.id);
    if (!record || record.kind !== kind || !safeEqual(secretHash(parsed.secret), record.hash)) return null;
    const refused = this.#unusable(record, now);
    return refused ? { refused } : record;
  }

  /** The user and role of an API token (see match). */
  principal(text: string, now: number): Principal | Refusal | null {
    const found = this.match(text, "api", now);
    if (found === null || "refused" in found) return found;
    return {
      user: found.subject,
      role: found.role ?? "reader",
      tokenId: found.id,
      group: found.group ?? null,
      qos: found.qos ?? null,
    };
  }

  /**
   * Each user's group, from their API tokens that are not revoked (a user's tokens should name one
   * group; the newest that names one wins).
   */
  groups(): ReadonlyMap<string, string> {
    this.#groups ??= this.#groupsNow();
    return this.#groups;
  }

  /** A user's group (groups()), or undefined. */
  groupOf(user: string): string | undefined {
    return this.groups().get(user);
  }

  #groupsNow(): Map<string, string> {
    const groups = new Map<string, string>();
    const newest = new Map<string, TokenRecord>();
    for (const record of this.#tokens.values()) {
      if (record.kind !== "api" || record.revokedAt !== null || !record.group) continue;
      const seen = newest.get(record.subject);
      if (
        seen &&
        (seen.createdAt > record.createdAt || (seen.createdAt === record.createdAt && seen.id > record.id))
      )
        continue;
      newest.set(record.subject, record);
      groups.set(record.subject, record.group);
    }
    return groups;
  }

  /** Every credential given to a host, revoked ones too. */
  credentialsOf(host: string): TokenRecord[] {
    return [...(this.#hostCredentials.get(host)?.values() ?? [])];
  }

  /** The usable credential of a host, if it has one. */
  credentialOf(host: string, now: number): TokenRecord | undefined {
    return this.credentialsOf(host).find((record) => this.#unusable(record, now) === null);
  }

  /** The credentials given under a join token (revoked with it). */
  credentialsUnder(joinId: string): TokenRecord[] {
    return [...this.#tokens.values()].filter((each) => each.kind === "host" && each.parent === joinId);
  }

  /** Why a token may not be used now, or null when it may. */
  #unusable(record: TokenRecord, now: number): string | null {
    const name = `${record.kind === "host" ? "host credential" : record.kind === "join" ? "join token" : "token"} ${record.id}`;
    if (record.revokedAt !== null) return `${name} was revoked`;
    if (record.expiresAt !== null && record.expiresAt <= now)
      return `${name} expired at ${new Date(record.expiresAt).toISOString()}`;
    if (record.parent !== null) {
      const parent = this.#tokens.get(record.parent);
      if (parent && this.#unusable(parent, now) !== null)
        return `${name}: its join token ${parent.id} was revoked or expired`;
    }
    return null;
  }
}

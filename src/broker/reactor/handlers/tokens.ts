// What admins ask of tokens, and the host credential an agent gets when it joins. Each change is
// committed before it is answered: a token printed is a token stored; a revocation answered is
// one every later request meets. Revoking a join token revokes the host credentials given under
// it and drops those hosts' connections (they are refused when they come back).

import type { Role, TokenKind, TokenRecord } from "../../../common/model/records.ts";
import type { NewToken } from "../../../common/model/tokens.ts";
import { ConflictError, InvalidRequestError, NotFoundError } from "../errors.ts";
import type { Step } from "../step.ts";

export interface TokenRequest {
  token: NewToken;
  subject: string;
  role: Role | null;
  pool: string | null;
  createdBy: string;
  expiresAt: number | null;
  /** An API token's group and QoS tiers (TokenRecord.group, .qos); absent: none, the default tier. */
  group?: string | null;
  qos?: string[] | null;
}

export function createToken(step: Step, request: TokenRequest): TokenRecord {
  const { token } = request;
  if (step.state.tokens.get(token.id)) throw new ConflictError(`a token ${token.id} exists already`);
  const { tiers } = step.state.qos;
  const unknown = (request.qos ?? []).find((name) => !tiers.has(name));
  if (unknown !== undefined)
    throw new InvalidRequestError(
      "qos",
      `no QoS tier ${unknown}; the tiers are ${[...tiers.keys()].join(", ")}`,
    );
  const record: TokenRecord = {
    id: token.id,
    kind: token.kind,
    subject: request.subject,
    role: request.role,
    pool: request.pool,
    parent: null,
    hash: token.hash,
    createdAt: step.now,
    createdBy: request.createdBy,
    expiresAt: request.expiresAt,
    revokedAt: null,
    group: request.group ?? null,
    qos: request.qos ?? null,
  };
  step.write.addToken(record);
  return record;
}

/**
 * Revokes a token of `kind` (a host credential's join token too, when given); answers it. A join
 * token takes its hosts' credentials with it, and those hosts are disconnected.
 */
export function revokeToken(step: Step, id: string, kinds: readonly TokenKind[]): TokenRecord {
  const record = step.state.tokens.get(id);
  if (!record || !kinds.includes(record.kind))
    throw new NotFoundError(`no ${kinds.join(" or ")} token ${id}`);
  if (record.revokedAt !== null) return record;
  revoke(step, record);
  if (record.kind === "join")
    for (const credential of step.state.tokens.credentialsUnder(record.id))
      if (credential.revokedAt === null) revoke(step, credential);
  return record;
}

function revoke(step: Step, record: TokenRecord): void {
  step.write.revokeToken(record);
  if (record.kind === "host") step.effect({ kind: "disconnect", host: record.subject });
}

/**
 * A joining host's new credential (its earlier ones are revoked: one per host). `parent` is the
 * stored join token it joined with, or null for the server's join token or a pilot's pool token.
 */
export function issueHostCredential(
  step: Step,
  host: string,
  pool: string,
  parent: string | null,
  token: NewToken,
): TokenRecord {
  for (const old of step.state.tokens.credentialsOf(host))
    if (old.revokedAt === null) step.write.revokeToken(old);
  const record: TokenRecord = {
    id: token.id,
    kind: "host",
    subject: host,
    role: null,
    pool,
    parent,
    hash: token.hash,
    createdAt: step.now,
    createdBy: parent ?? "join token",
    expiresAt: null,
    revokedAt: null,
    group: null,
    qos: null,
  };
  step.write.addToken(record);
  return record;
}

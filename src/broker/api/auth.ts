// Bearer tokens: who presents one. The admin token given at server start and stored API tokens
// (with a role) for the API; the server's join token, pools' tokens, stored join tokens and host
// credentials for agents.

import { randomBytes } from "node:crypto";
import type { FastifyRequest } from "fastify";
import type { Principal, Refusal, TokenKind, TokenRecord } from "../../common/model/records.ts";
import { safeEqual } from "../../common/model/tokens.ts";
import { joinTokenScope } from "../pools/pool-token.ts";

export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const match = /^Bearer\s+(.+)$/i.exec(header.trim());
  return match ? match[1].trim() : null;
}

export function newToken(): string {
  return randomBytes(24).toString("base64url");
}

/**
 * An agent's caller: the host its credential speaks for, or null for a join token (the server's,
 * a pool's or a stored one), which may only join: the file routes serve hosts, not tokens.
 */
export type AgentCaller = { kind: "agent"; host: string | null };

/** What telling a stored token's holder asks of the tokens the server gave out. */
export interface TokenLookup {
  /** Who presents an API token `text` at `now`: its user and role, a refusal (revoked, expired), or null. */
  principal(text: string, now: number): Principal | Refusal | null;
  /** The stored token of `kind` that `text` is at `now`, a refusal, or null. */
  match(text: string, kind: TokenKind, now: number): TokenRecord | Refusal | null;
}

export interface Credentials {
  /** The admin token given at server start (`--admin-token` / the data dir's admin-token). */
  adminToken: string;
  /** The server's own join token (any pool); pools' derived tokens come from it. */
  joinToken: string;
  tokens: TokenLookup;
  now: number;
}

/** The admin token given at server start speaks for this user. */
export const START_ADMIN: Principal = { user: "admin", role: "admin", tokenId: null };

/** Who asked for a change, for events and the log ("cancel requested by alice"). */
export function actorOf(request: FastifyRequest): string {
  return (request.principal ?? START_ADMIN).user;
}

/**
 * Who presents `token` on an API route: the start admin token or a stored API token. A refusal
 * names why (revoked, expired); null is a token this server does not know.
 */
export function identifyUser(token: string, credentials: Credentials): Principal | Refusal | null {
  if (safeEqual(token, credentials.adminToken)) return START_ADMIN;
  return credentials.tokens.principal(token, credentials.now);
}

/**
 * Who presents `token` on the agents' routes: a host credential's host, or (host null) the server's
 * join token, a pool's, or a stored join token. A refusal names why; null is a token this server
 * does not know.
 */
export function identifyAgent(token: string, credentials: Credentials): AgentCaller | Refusal | null {
  if (joinTokenScope(credentials.joinToken, token) !== null) return { kind: "agent", host: null };
  for (const kind of ["join", "host"] as const) {
    const found = credentials.tokens.match(token, kind, credentials.now);
    if (found === null) continue;
    if ("refused" in found) return found;
    return { kind: "agent", host: kind === "host" ? found.subject : null };
  }
  return null;
}

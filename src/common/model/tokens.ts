// Tokens as strings: `st` + a letter for the kind + `_` + a public id + `_` + a secret, e.g.
// `sta_3f9c01d2aa_<48 hex>`. The id names the token in lists and revocations; only the SHA-256 of
// the secret is stored. The secret is 192 random bits, so a plain SHA-256 is enough (a slow password
// hash protects guessable secrets, which these are not).

import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { TokenKind } from "./records.ts";

const LETTER: Record<TokenKind, string> = { api: "a", join: "j", host: "h" };
const KIND_OF: Record<string, TokenKind> = { a: "api", j: "join", h: "host" };
const TOKEN = /^st([ajh])_([0-9a-f]{10})_([0-9a-f]{48})$/;

export interface ParsedToken {
  kind: TokenKind;
  id: string;
  secret: string;
}

export interface NewToken extends ParsedToken {
  /** What the holder presents: printed once, never stored. */
  text: string;
  hash: string;
}

/** Compares two secrets in time that does not depend on where they differ. */
export function safeEqual(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Hex SHA-256 of a token's secret: what the store keeps. */
export function secretHash(secret: string): string {
  return createHash("sha256").update(secret).digest("hex");
}

function formatToken(kind: TokenKind, id: string, secret: string): string {
  return `st${LETTER[kind]}_${id}_${secret}`;
}

/** A presented string as a token of this server's form, or null when it has another form. */
export function parseToken(text: string): ParsedToken | null {
  const match = TOKEN.exec(text);
  if (!match) return null;
  return { kind: KIND_OF[match[1]], id: match[2], secret: match[3] };
}

/** A new token of `kind` with a random id and secret. */
export function newTokenOf(kind: TokenKind, random: (bytes: number) => Buffer = randomBytes): NewToken {
  const id = random(5).toString("hex");
  const secret = random(24).toString("hex");
  return { kind, id, secret, text: formatToken(kind, id, secret), hash: secretHash(secret) };
}

/**
 * A token as its holder presents it, with the hash the store would keep; null when the text is not
 * a token of `kind`. A joining agent makes its host credential itself (newTokenOf) and proposes it
 * in its hello: the server keeps this hash of it.
 */
export function presentedToken(text: string, kind: TokenKind): NewToken | null {
  const parsed = parseToken(text);
  if (!parsed || parsed.kind !== kind) return null;
  return { ...parsed, text, hash: secretHash(parsed.secret) };
}

const UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400, w: 604_800 };

/**
 * A lifetime such as `30d`, `12h`, `90m`, `45s` or `2w` in milliseconds; null when the text is not
 * one (a bare number is seconds).
 */
export function parseLifetime(text: string): number | null {
  const match = /^(\d+)\s*([smhdw]?)$/.exec(text.trim());
  if (!match) return null;
  const seconds = Number(match[1]) * UNITS[match[2] || "s"];
  return seconds > 0 && Number.isSafeInteger(seconds * 1000) ? seconds * 1000 : null;
}

// Bearer tokens: the admin token for the API, the join token for agents.

import { randomBytes, timingSafeEqual } from "node:crypto";

export function safeEqual(given: string, expected: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(expected);
  return a.length === b.length && timingSafeEqual(a, b);
}

export function bearerToken(header: string | undefined): string | null {
  if (!header) return null;
  const match = /^Bearer\s+(.+)$/i.exec(header.trim());
  return match ? match[1].trim() : null;
}

export function newToken(): string {
  return randomBytes(24).toString("base64url");
}

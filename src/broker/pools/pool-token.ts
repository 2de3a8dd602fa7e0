// One join token per pool: a pilot carries a token that lets its agent join its own pool and no
// other, so a batch job that leaks its token (sbatch scripts and their environment are readable by
// the site's admins, sometimes by other users) cannot bring a host into the default pool or another
// pool. The token is derived from the server's join token (an HMAC of the pool's name), so every
// broker that shares the join token accepts it and nothing has to be stored.

import { createHmac } from "node:crypto";
import { safeEqual } from "../../common/model/tokens.ts";

const PREFIX = "pool.";

/** The join token of `pool`'s pilots. */
export function poolJoinToken(joinToken: string, pool: string): string {
  const mac = createHmac("sha256", joinToken).update(`steward pool join ${pool}`).digest("base64url");
  return `${PREFIX}${pool}.${mac}`;
}

/**
 * Which pools a presented token lets an agent join: "any" for the server's join token, the pool's
 * name for a pool's token, null for anything else.
 */
export function joinTokenScope(joinToken: string, presented: string): "any" | { pool: string } | null {
  if (safeEqual(presented, joinToken)) return "any";
  if (!presented.startsWith(PREFIX)) return null;
  const dot = presented.lastIndexOf(".");
  if (dot <= PREFIX.length) return null;
  const pool = presented.slice(PREFIX.length, dot);
  return safeEqual(presented, poolJoinToken(joinToken, pool)) ? { pool } : null;
}

/**
 * The batch job name of `pool`'s pilots: `steward-pilot-TAG-POOL`, TAG a hash of the join token, so
 * that brokers of one deployment (which share the join token) agree on it, and pilots of another
 * deployment on the same cluster never share it. It tells pilots apart from other jobs of the
 * account; it is no secret (squeue shows it), so pilots are also told by the account (squeue
 * --user) and the job ids this broker recorded (pools/pilot-ledger.ts).
 */
export function pilotJobName(joinToken: string, pool: string): string {
  const tag = createHmac("sha256", joinToken).update("steward pilot job name").digest("hex").slice(0, 12);
  return `steward-pilot-${tag}-${pool}`;
}

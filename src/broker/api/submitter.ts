// Who a submit (of a job or of a workflow) is for: its owner, whose jobs its dependencies may name,
// the QoS tiers it may ask for, and the client's Idempotency-Key that makes a repeated submit answer
// the first one's jobs.

import type { FastifyRequest } from "fastify";
import { DEFAULT_QOS } from "../../common/model/qos-name.ts";
import { InvalidRequestError } from "../reactor/errors.ts";
import { START_ADMIN } from "./auth.ts";
import { USER_NAME } from "./requests.ts";

/**
 * A new job's owner: the user of the token that submits it (the start admin token's is `admin`).
 * An admin may submit on another user's behalf by naming them in `x-steward-user` (the API only;
 * the CLI sends no such header); any other role's header is ignored.
 */
export function ownerOf(request: FastifyRequest): string {
  const principal = request.principal ?? START_ADMIN;
  if (principal.role !== "admin") return principal.user;
  const header = request.headers["x-steward-user"];
  const user = Array.isArray(header) ? header[0] : header;
  return user && USER_NAME.test(user) ? user : principal.user;
}

/** A new job's owner, and whose jobs its dependsOn may name. */
export interface Submitter {
  owner: string;
  /** A user's dependencies are their own jobs only (another's is answered as no job); null for an admin's. */
  dependencyOwner: string | null;
  /** The QoS tiers the token allows (`token create --qos`): the default tier when it names none; null (any) for an admin. */
  allowedQos: readonly string[] | null;
}

export function submitterOf(request: FastifyRequest): Submitter {
  const principal = request.principal ?? START_ADMIN;
  const admin = principal.role === "admin";
  return {
    owner: ownerOf(request),
    dependencyOwner: admin ? null : principal.user,
    allowedQos: admin ? null : (principal.qos ?? [DEFAULT_QOS]),
  };
}

/** The client's Idempotency-Key: letters, digits, `-` and `_`, 1 to 128 of them; null when absent. */
export function submitKeyOf(request: FastifyRequest): string | null {
  const header = request.headers["idempotency-key"];
  const key = Array.isArray(header) ? header[0] : header;
  if (key === undefined) return null;
  if (!/^[\w-]{1,128}$/.test(key)) {
    throw new InvalidRequestError("Idempotency-Key", "must be 1 to 128 letters, digits, - or _");
  }
  return key;
}

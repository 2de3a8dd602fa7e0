// /api/v1/tokens, /api/v1/join-tokens and /api/v1/whoami: admins make and revoke API tokens (a
// user and a role) and join tokens (a pool); a new token is shown once, in the answer that makes
// it; anyone may ask who their token speaks for.

import type { FastifyInstance, FastifyRequest } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { errors } from "../../../common/api/errors.ts";
import { json } from "../../../common/api/json-answer.ts";
import {
  newTokenSchema,
  ROLES,
  type TokenView,
  tokenSchema,
  whoamiSchema,
} from "../../../common/api/tokens.ts";
import { DEFAULT_QOS, QOS_NAME } from "../../../common/model/qos-name.ts";
import type { TokenKind, TokenRecord } from "../../../common/model/records.ts";
import { newTokenOf } from "../../../common/model/tokens.ts";
import { START_ADMIN } from "../auth.ts";
import type { ApiPorts } from "../ports.ts";
import { USER_NAME } from "../requests.ts";

const lifetime = z
  .int()
  .min(1)
  .max(100 * 365 * 86_400)
  .optional()
  .meta({ description: "seconds until the token expires (without it, it never does)" });

const qosName = z
  .string()
  .regex(QOS_NAME, "lower-case letters, digits, - and _, up to 63, not starting with - or _");

const tokenParams = z.object({ id: z.string().min(1).meta({ description: "the token's id" }) });

function tokenView(record: TokenRecord, now: number): TokenView {
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  return {
    id: record.id,
    kind: record.kind,
    user: record.subject,
    role: record.role,
    pool: record.pool,
    state:
      record.revokedAt !== null
        ? "revoked"
        : record.expiresAt !== null && record.expiresAt <= now
          ? "expired"
          : "active",
    createdAt: new Date(record.createdAt).toISOString(),
    createdBy: record.createdBy,
    expiresAt: iso(record.expiresAt),
    revokedAt: iso(record.revokedAt),
    group: record.group ?? null,
    qos: record.qos ?? null,
  };
}

function actor(request: FastifyRequest): string {
  return (request.principal ?? START_ADMIN).user;
}

export function registerTokenRoutes(app: FastifyInstance, ports: ApiPorts): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  const now = () => ports.read.now();

  api.get(
    "/api/v1/whoami",
    {
      schema: {
        summary: "The user and role of the token this request carries",
        response: { 200: json(whoamiSchema, "who the token speaks for"), ...errors(401) },
      },
    },
    async (request) => {
      const principal = request.principal ?? START_ADMIN;
      const record = principal.tokenId === null ? undefined : ports.read.token(principal.tokenId);
      return {
        user: principal.user,
        role: principal.role,
        tokenId: principal.tokenId,
        expiresAt: record?.expiresAt ? new Date(record.expiresAt).toISOString() : null,
        group: principal.group ?? null,
        qos: principal.role === "admin" ? null : [...(principal.qos ?? [DEFAULT_QOS])],
      };
    },
  );

  api.post(
    "/api/v1/tokens",
    {
      schema: {
        summary:
          "Make an API token for a user with a role (admin only); the answer holds the token, shown once",
        body: z.object({
          user: z
            .string()
            .regex(USER_NAME, "letters, digits, '.', '_', '@' and '-', up to 64, not starting with a sign")
            .meta({ description: "the user the token speaks for: the owner of the jobs it submits" }),
          role: z.enum(ROLES),
          expiresInSeconds: lifetime,
          group: qosName
            .optional()
            .meta({ description: "the user's group, for the groups' limits of the server's QoS file" }),
          qos: z.array(qosName).min(1).optional().meta({
            description:
              "the QoS tiers the token's jobs may ask for (without it: normal only; an admin's token may use any)",
          }),
        }),
        response: { 201: json(newTokenSchema, "the new token"), ...errors(400, 401, 403) },
      },
    },
    async (request, reply) => {
      const { user, role, expiresInSeconds, group, qos } = request.body;
      const token = newTokenOf("api");
      const record = await ports.tokens.create({
        token,
        subject: user,
        role,
        pool: null,
        createdBy: actor(request),
        expiresAt: expiresInSeconds === undefined ? null : now() + expiresInSeconds * 1000,
        group: group ?? null,
        qos: qos ? [...new Set(qos)] : null,
      });
      reply.code(201);
      return { ...tokenView(record, now()), token: token.text };
    },
  );

  api.get(
    "/api/v1/tokens",
    {
      schema: {
        summary: "API tokens and host credentials, oldest first (never the tokens themselves)",
        querystring: z.object({
          kind: z.enum(["api", "host"]).optional().meta({ description: "only tokens of this kind" }),
        }),
        response: { 200: json(z.array(tokenSchema), "the tokens"), ...errors(400, 401, 403) },
      },
    },
    async (request) => {
      const kinds: TokenKind[] = request.query.kind ? [request.query.kind] : ["api", "host"];
      return ports.read
        .listTokens()
        .filter((each) => kinds.includes(each.kind))
        .map((each) => tokenView(each, now()));
    },
  );

  api.delete(
    "/api/v1/tokens/:id",
    {
      schema: {
        summary: "Revoke an API token or a host credential: refused from now on (its host is disconnected)",
        params: tokenParams,
        response: { 200: json(tokenSchema, "the token, revoked"), ...errors(401, 403, 404) },
      },
    },
    async (request) => tokenView(await ports.tokens.revoke(request.params.id, ["api", "host"]), now()),
  );

  api.post(
    "/api/v1/join-tokens",
    {
      schema: {
        summary:
          "Make a join token for agents of a pool (admin only); the answer holds the token, shown once",
        body: z
          .object({
            pool: z
              .string()
              .min(1)
              .max(64)
              .optional()
              .meta({ description: "its agents' pool (without it, any pool)" }),
            expiresInSeconds: lifetime,
          })
          .nullish(),
        response: { 201: json(newTokenSchema, "the new join token"), ...errors(400, 401, 403) },
      },
    },
    async (request, reply) => {
      const token = newTokenOf("join");
      const expiresInSeconds = request.body?.expiresInSeconds;
      const record = await ports.tokens.create({
        token,
        subject: actor(request),
        role: null,
        pool: request.body?.pool ?? null,
        createdBy: actor(request),
        expiresAt: expiresInSeconds === undefined ? null : now() + expiresInSeconds * 1000,
      });
      reply.code(201);
      return { ...tokenView(record, now()), token: token.text };
    },
  );

  api.get(
    "/api/v1/join-tokens",
    {
      schema: {
        summary: "Join tokens, oldest first (never the tokens themselves)",
        response: { 200: json(z.array(tokenSchema), "the join tokens"), ...errors(401, 403) },
      },
    },
    async () => ports.read.listTokens("join").map((each) => tokenView(each, now())),
  );

  api.delete(
    "/api/v1/join-tokens/:id",
    {
      schema: {
        summary:
          "Revoke a join token: agents that joined with it are disconnected and refused, with their host credentials",
        params: tokenParams,
        response: { 200: json(tokenSchema, "the join token, revoked"), ...errors(401, 403, 404) },
      },
    },
    async (request) => tokenView(await ports.tokens.revoke(request.params.id, ["join"]), now()),
  );
}

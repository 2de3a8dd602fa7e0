// /api/v1/secrets: a user's secrets (S3 credentials their jobs name by `credentials`), set by PUT
// with the value as the body (201 new, 200 replaced), listed by name and times, removed by DELETE.
// No route answers a value. A secret is its owner's: the user of the token (an admin may act for
// another user with x-steward-user, as for a submit: api/submitter.ts).

import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { z } from "zod";
import { errors } from "../../../common/api/errors.ts";
import { json } from "../../../common/api/json-answer.ts";
import { type SecretView, secretNameParam, secretSchema } from "../../../common/api/secrets.ts";
import type { SecretListing } from "../../../common/model/records.ts";
import { secretValueSchema } from "../../../common/model/secret-value.ts";
import type { ApiPorts } from "../ports.ts";
import { ownerOf } from "../submitter.ts";

const secretParams = z.object({ name: secretNameParam });

function secretView(listing: SecretListing): SecretView {
  return {
    name: listing.name,
    createdAt: new Date(listing.createdAt).toISOString(),
    updatedAt: new Date(listing.updatedAt).toISOString(),
  };
}

export function registerSecretRoutes(app: FastifyInstance, ports: ApiPorts): void {
  const api = app.withTypeProvider<ZodTypeProvider>();

  api.put(
    "/api/v1/secrets/:name",
    {
      schema: {
        summary:
          "Set one of your secrets: S3 credentials your jobs name by `credentials` (201 new, 200 replaced); the answer never holds the value",
        params: secretParams,
        body: secretValueSchema,
        response: {
          200: json(secretSchema, "the secret, its value replaced"),
          201: json(secretSchema, "the new secret"),
          ...errors(400, 401, 403),
        },
      },
    },
    async (request, reply) => {
      const set = await ports.secrets.set(ownerOf(request), request.params.name, request.body);
      reply.code(set.created ? 201 : 200);
      return secretView(set.secret);
    },
  );

  api.get(
    "/api/v1/secrets",
    {
      schema: {
        summary: "Your secrets by name, with when they were set (never their values)",
        response: { 200: json(z.array(secretSchema), "the secrets"), ...errors(401, 403) },
      },
    },
    async (request) => ports.read.secretsOf(ownerOf(request)).map(secretView),
  );

  api.delete(
    "/api/v1/secrets/:name",
    {
      schema: {
        summary:
          "Remove one of your secrets: jobs that name it are refused, and attempts started after fail their transfers",
        params: secretParams,
        response: { 200: json(secretSchema, "the secret, removed"), ...errors(400, 401, 403, 404) },
      },
    },
    async (request) => secretView(await ports.secrets.remove(ownerOf(request), request.params.name)),
  );
}

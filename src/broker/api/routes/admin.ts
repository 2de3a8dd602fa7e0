// Administration of the server itself: a backup of the embedded store, streamed (src/broker/backup/).

import type { Readable } from "node:stream";
import type { FastifyInstance } from "fastify";
import type { ZodTypeProvider } from "fastify-type-provider-zod";
import { binary } from "../../../common/api/bytes-answer.ts";
import { errors } from "../../../common/api/errors.ts";
import { BackupUnsupportedError } from "../../backup/backup.ts";

/** Starts a backup and gives its archive; absent where the server was started without one. */
export type StartBackup = () => Promise<Readable>;

export function registerAdminRoutes(app: FastifyInstance, startBackup: StartBackup | undefined): void {
  const api = app.withTypeProvider<ZodTypeProvider>();
  api.post(
    "/api/v1/admin/backup",
    {
      schema: {
        summary:
          "A consistent backup of a server on the embedded SQLite store, as a gzipped tar: the database (an online copy), the start tokens and every file; `steward server --restore FILE` starts a server from it (admin only). A PostgreSQL store answers 501: back it up with pg_dump",
        response: {
          200: binary("the archive (tar.gz)", "application/gzip"),
          ...errors(401, 403, 501),
        },
      },
    },
    async (request, reply) => {
      if (!startBackup) {
        return reply
          .code(501)
          .send({ error: { code: "not_supported", message: "this server was started without backups" } });
      }
      let archive: Readable;
      try {
        archive = await startBackup();
      } catch (error) {
        if (error instanceof BackupUnsupportedError) {
          return reply.code(501).send({ error: { code: "not_supported", message: error.message } });
        }
        throw error;
      }
      request.log.info({ user: request.principal?.user }, "backup started");
      archive.once("end", () => request.log.info("backup sent"));
      reply.header("content-type", "application/gzip");
      reply.header("content-disposition", 'attachment; filename="steward-backup.tar.gz"');
      return reply.send(archive);
    },
  );
}

// The web dashboard: static files from src/broker/web (versioned with the server, no build step) at `/`
// and `/ui/`, and the three browser modules it imports (preact, its hooks, htm) from node_modules
// at `/ui/vendor/`. Every request the page makes after that goes through the public API.

import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { dirname, join } from "node:path";
import fastifyStatic from "@fastify/static";
import type { FastifyInstance } from "fastify";
import { dashboardHeaders } from "./dashboard-headers.ts";

export const WEB_DIR = join(import.meta.dirname, "..", "web");

const require = createRequire(import.meta.url);
/** The ES module build beside a package's CommonJS entry (`dist/x.js` -> `dist/x.mjs`). */
const moduleBuild = (name: string, file: string) => join(dirname(require.resolve(name)), file);

/** The browser modules the page's import map names, and where each is. */
const VENDOR: Record<string, () => string> = {
  "preact.js": () => moduleBuild("preact", "preact.mjs"),
  "hooks.js": () => moduleBuild("preact/hooks", "hooks.mjs"),
  "htm.js": () => moduleBuild("htm", "htm.mjs"),
};

export async function registerDashboard(app: FastifyInstance): Promise<void> {
  const index = join(WEB_DIR, "index.html");
  // Every response of the dashboard (the page, its modules and styles, a 404 under /ui/) carries them.
  const headers = dashboardHeaders(await readFile(index, "utf8"));
  app.addHook("onRequest", async (request, reply) => {
    const path = request.url.split("?")[0];
    if (path === "/" || path.startsWith("/ui/")) reply.headers(headers);
  });
  app.get("/", { schema: { hide: true } }, async (_request, reply) =>
    reply
      .type("text/html; charset=utf-8")
      .header("cache-control", "no-cache")
      .send(await readFile(index)),
  );
  app.get<{ Params: { file: string } }>(
    "/ui/vendor/:file",
    { schema: { hide: true } },
    async (request, reply) => {
      const where = VENDOR[request.params.file];
      if (!where) return reply.code(404).send({ error: { code: "not_found", message: "no such file" } });
      return reply
        .type("text/javascript; charset=utf-8")
        .header("cache-control", "public, max-age=3600")
        .send(await readFile(where()));
    },
  );
  await app.register(fastifyStatic, {
    root: WEB_DIR,
    prefix: "/ui/",
    decorateReply: false,
    cacheControl: false,
  });
}

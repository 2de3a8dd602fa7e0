// A fastify server with the broker's last-resort guard and routes that let an error escape (an
// 'error' event nobody hears, a rejection nobody awaits), for test/security/last-resort.test.ts.
// Prints its port on stdout once listening.

import { EventEmitter } from "node:events";
import Fastify, { type FastifyBaseLogger } from "fastify";
import pino from "pino";
import { installLastResortGuard, trackRequests } from "../../src/broker/api/last-resort.ts";

const log = pino({ level: "info" }, process.stderr);
installLastResortGuard(log);
const app = Fastify({ loggerInstance: log as FastifyBaseLogger });
trackRequests(app);
app.get("/ok", async () => ({ ok: true }));
// An emitter's 'error' with no listener, a tick after the handler started: the request never answers by itself.
app.get("/stray-error", (_request, _reply) => {
  setTimeout(() => new EventEmitter().emit("error", new Error("secret detail /srv/steward/x")), 10);
});
app.get("/stray-rejection", (_request, _reply) => {
  setTimeout(() => {
    Promise.reject(new Error("secret detail /srv/steward/y"));
  }, 10);
});
const address = await app.listen({ host: "127.0.0.1", port: 0 });
process.stdout.write(`${new URL(address).port}\n`);

// The broker never dies of an error in one request. Every stream of a request has its errors
// handled where it is made; this is the guard behind them: an error that still escapes (an 'error'
// event nobody listens to, a promise nobody awaits) is logged, and when it is known to come from a
// request, that request alone is answered 500 ("internal error", with the request's id, which the
// log line carries) and its connection closed, while the process goes on serving the others.

import { AsyncLocalStorage } from "node:async_hooks";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { Logger } from "pino";

interface RequestContext {
  request: FastifyRequest;
  reply: FastifyReply;
}

const requestContext = new AsyncLocalStorage<RequestContext>();

/** The answer to a request that failed inside the server: no internal detail, an id to find the log by. */
export function internalErrorAnswer(requestId: string): { error: { code: string; message: string } } {
  return {
    error: { code: "internal", message: `internal error (request ${requestId}; the server's log has it)` },
  };
}

/**
 * Runs each request's hooks and handler in a context that names the request, so that an error
 * escaping from its work (callbacks and promises it started) can be charged to it. Register it
 * before any other hook.
 */
export function trackRequests(app: FastifyInstance): void {
  app.addHook("onRequest", (request, reply, done) => {
    requestContext.run({ request, reply }, done);
  });
}

/** Installs the guard on the process (the daemons: `steward server`, `steward up`). */
export function installLastResortGuard(log: Logger): void {
  process.on("uncaughtException", (error) => strayError(error, "uncaught exception", log));
  process.on("unhandledRejection", (reason) => strayError(reason, "unhandled rejection", log));
}

function strayError(error: unknown, what: string, log: Logger): void {
  const context = requestContext.getStore();
  if (!context) {
    log.error({ err: error }, `${what} outside any request: logged, the server goes on`);
    return;
  }
  const { request, reply } = context;
  request.log.error({ err: error }, `${what} in a request: answered 500, the server goes on`);
  if (!reply.sent && !reply.raw.headersSent) {
    reply.code(500).header("connection", "close").send(internalErrorAnswer(request.id));
  } else {
    request.raw.socket?.destroy();
  }
}

// A request body that stops arriving is dropped, never held: a client that sends its headers and
// part of its body, then nothing (a stalled upload, or a request made to hold the broker's
// sockets, memory and parser state), gets a 408 once no byte of its body has come for the body
// timeout, and its connection is closed; the route reading the body sees it cut short and keeps
// nothing of it. Time spent waiting for the server (which reads slowly while it stores a large
// file) is not counted: only the client's silence is.

import type { IncomingMessage, Server, ServerResponse } from "node:http";
import { monotonicMs } from "../../common/time/clocks.ts";

/** `--body-timeout-seconds`: the longest a request body may pause between two reads (nginx's client_body_timeout is also 60 s). */
export const DEFAULT_BODY_TIMEOUT_SECONDS = 60;

/** What the client reads before its connection closes. */
export function bodyTimeoutAnswer(seconds: number): string {
  const body = JSON.stringify({
    error: {
      code: "body_timeout",
      message: `the request body stopped arriving: no byte for ${seconds} s (--body-timeout-seconds)`,
    },
  });
  return [
    "HTTP/1.1 408 Request Timeout",
    "Connection: close",
    "Content-Type: application/json; charset=utf-8",
    `Content-Length: ${Buffer.byteLength(body)}`,
    "",
    body,
  ].join("\r\n");
}

/** Whether the request says a body follows (a length above 0, or a chunked body). */
export function hasBody(request: IncomingMessage): boolean {
  if (request.headers["transfer-encoding"] !== undefined) return true;
  const length = Number(request.headers["content-length"] ?? 0);
  return Number.isFinite(length) && length > 0;
}

/**
 * Whether the body has stalled: nothing new from the client since `lastProgressAt`, for the
 * timeout, while the server had read everything the client sent (bytes buffered and not yet read
 * mean the server is the slow one).
 */
export function isBodyStalled(
  now: number,
  lastProgressAt: number,
  buffered: number,
  timeoutMs: number,
): boolean {
  return buffered === 0 && now - lastProgressAt >= timeoutMs;
}

/**
 * Watches every request with a body on `server`; `onStall` hears of each one dropped. The check
 * reads the socket's byte count (no listener on the body itself, which would start it flowing
 * before its parser is attached).
 */
export function watchBodyTimeouts(
  server: Server,
  timeoutSeconds: number,
  onStall: (request: IncomingMessage) => void,
): void {
  const timeoutMs = timeoutSeconds * 1000;
  const everyMs = Math.max(50, Math.min(1000, timeoutMs / 4));
  server.on("request", (request: IncomingMessage, response: ServerResponse) => {
    if (!hasBody(request) || request.complete) return;
    const socket = request.socket;
    let lastBytes = socket.bytesRead;
    let lastProgressAt = monotonicMs();
    const timer = setInterval(() => {
      if (request.complete || request.destroyed) return stop();
      const now = monotonicMs();
      const buffered = request.readableLength;
      if (socket.bytesRead !== lastBytes || buffered > 0) {
        lastBytes = socket.bytesRead;
        lastProgressAt = now;
        return;
      }
      if (!isBodyStalled(now, lastProgressAt, buffered, timeoutMs)) return;
      stop();
      onStall(request);
      // The route still waiting for the body then sees it cut short; its answer has nowhere to go.
      if (socket.writable && !response.headersSent)
        socket.end(bodyTimeoutAnswer(timeoutSeconds), () => socket.destroy());
      else socket.destroy();
    }, everyMs);
    timer.unref();
    const stop = () => {
      clearInterval(timer);
      request.off("end", stop);
      request.off("close", stop);
    };
    request.once("end", stop);
    request.once("close", stop);
  });
}

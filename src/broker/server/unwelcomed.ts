// Agent connections before their welcome: anyone who can reach the port can open one, so until a
// hello is accepted a connection may cost the broker little. It may send a small budget of bytes
// (a hello, with room for the attempts an agent of a few thousand slots holds), it must send its
// hello within a few seconds, and only so many such connections are open at once; more are
// answered 503 at the upgrade (an agent tries again later). Once welcomed, a connection has the
// gateway's normal message limit.
//
// The budget is counted on the socket itself, beside the WebSocket's own reader: `ws` takes one
// message-size limit per server, fixed when the connection is made, and a frame is held whole
// until it ends, so a frame announced as 60 MB would otherwise be read to its end before any
// check of ours could run.

import type { Duplex } from "node:stream";
import type { WebSocket } from "ws";

export interface UnwelcomedLimits {
  /** Bytes a connection may send before its hello is accepted. */
  bytes: number;
  /** How long a new connection has to send its hello (ms). */
  helloMs: number;
  /** Connections not welcomed yet, at most, at once. */
  connections: number;
}

export const UNWELCOMED_LIMITS: UnwelcomedLimits = {
  bytes: 128 * 1024,
  helloMs: 5000,
  connections: 256,
};

/** The close code for a connection that broke the rules of its first seconds (policy violation). */
export const HELLO_FIRST_CLOSE_CODE = 1008;

/** What the gateway tells the watch of one connection. */
export interface UnwelcomedWatch {
  /** A valid hello arrived: the clock stops (an accepted hello may take a commit to welcome). */
  helloArrived(): void;
  /** The welcome is out: the connection leaves the count and may send messages of any allowed size. */
  welcomed(): void;
  /** Closes the connection for breaking the rules (first message not a hello, say). */
  refuse(reason: string): void;
}

export class UnwelcomedConnections {
  readonly limits: UnwelcomedLimits;
  #open = 0;

  constructor(limits: UnwelcomedLimits = UNWELCOMED_LIMITS) {
    this.limits = limits;
  }

  /** Whether one more may be upgraded; otherwise answer `refuseUpgrade`. */
  hasRoom(): boolean {
    return this.#open < this.limits.connections;
  }

  /** Answers an upgrade with 503 and closes the socket. */
  refuseUpgrade(socket: Duplex): void {
    const body = `too many agent connections waiting for their welcome (at most ${this.limits.connections}); try again\n`;
    socket.on("error", () => {});
    socket.once("finish", () => socket.destroy());
    socket.end(
      "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\n" +
        `Content-Type: text/plain; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }

  /**
   * Watches a connection just upgraded until its welcome or its close, whichever comes first; it
   * counts from now. What came with the upgrade request is counted too: `ws` puts it back into the
   * socket, which emits it again.
   */
  watch(ws: WebSocket, socket: Duplex): UnwelcomedWatch {
    const { bytes, helloMs } = this.limits;
    this.#open++;
    let counted = true;
    let received = 0;
    const leave = () => {
      if (!counted) return;
      counted = false;
      this.#open--;
      clearTimeout(timer);
    };
    // Cut at once, not closed politely: a close would go on reading until the peer answers it.
    const count = (chunk: Buffer) => {
      received += chunk.length;
      if (received > bytes) ws.terminate();
    };
    const refuse = (reason: string) => {
      clearTimeout(timer);
      ws.close(HELLO_FIRST_CLOSE_CODE, reason);
      // A peer that does not answer the close is not waited for (its bytes still count meanwhile).
      setTimeout(() => ws.terminate(), 1000).unref();
    };
    const timer = setTimeout(() => refuse(`no hello within ${helloMs / 1000} s`), helloMs);
    timer.unref();
    ws.once("close", leave);
    socket.on("data", count);
    return {
      helloArrived: () => clearTimeout(timer),
      welcomed: () => {
        leave();
        socket.off("data", count);
      },
      refuse,
    };
  }
}

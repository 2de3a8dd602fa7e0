// A plain HTTP proxy on loopback in front of a server, noting each request's method and path (with
// its query): how many requests a CLI command makes, seen from outside it. A WebSocket (an agent's
// connection) is passed through as it is, noted as `UPGRADE /path`. Each answer is noted too (its
// status, the Range asked for, the body's bytes passed on), and an answer may be cut after some of
// its bytes (the connection broken halfway, as a network may) or passed on slowly (a slow link).
// When the server behind it dies, the connections through it break as theirs did.

import { createServer, request } from "node:http";
import { type AddressInfo, connect, type Socket } from "node:net";
import { Transform } from "node:stream";

/** An answer passed on: to which request, what it asked for, what came of it. */
export interface ProxiedAnswer {
  /** `METHOD /path?query`. */
  request: string;
  range: string | null;
  ifRange: string | null;
  status: number;
  /** Bytes of the body passed on. */
  bytes: number;
  /** Whether the proxy broke the connection before the body's end. */
  cut: boolean;
}

export interface CountingProxy {
  /** The proxy's URL, for STEWARD_URL. */
  url: string;
  /** `METHOD /path?query` of each request passed on, in the order received. */
  requests: string[];
  /** Each answer, in the order they began. */
  answers: ProxiedAnswer[];
  close(): Promise<void>;
}

export interface ProxyOptions {
  /** After how many bytes of its body to break the answer to a request (`METHOD /path`); null: never. */
  cutAfter?: (request: string) => number | null;
  /** How many bytes a second to pass on of the answer to a request; null: as they come. */
  bytesPerSecond?: (request: string) => number | null;
}

export async function countingProxy(target: string, options: ProxyOptions = {}): Promise<CountingProxy> {
  const { hostname, port } = new URL(target);
  const requests: string[] = [];
  const answers: ProxiedAnswer[] = [];
  const server = createServer((incoming, outgoing) => {
    const line = `${incoming.method} ${incoming.url}`;
    requests.push(line);
    const forward = request(
      { hostname, port, method: incoming.method, path: incoming.url, headers: incoming.headers },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        const noted: ProxiedAnswer = {
          request: line,
          range: incoming.headers.range ?? null,
          ifRange: (incoming.headers["if-range"] as string | undefined) ?? null,
          status: answer.statusCode ?? 502,
          bytes: 0,
          cut: false,
        };
        answers.push(noted);
        const limit = options.cutAfter?.(line) ?? null;
        const rate = options.bytesPerSecond?.(line) ?? null;
        const counting = new Transform({
          transform(chunk: Buffer, _encoding, done) {
            if (limit !== null && noted.bytes + chunk.length >= limit) {
              const part = chunk.subarray(0, limit - noted.bytes);
              noted.bytes = limit;
              noted.cut = true;
              outgoing.write(part, () => {
                answer.destroy();
                outgoing.socket?.destroy();
              });
              done();
              return;
            }
            noted.bytes += chunk.length;
            if (rate === null) done(null, chunk);
            else setTimeout(() => done(null, chunk), (chunk.length / rate) * 1000);
          },
        });
        answer.pipe(counting).pipe(outgoing);
        // The server went away before the answer's end: so does the proxy's answer.
        answer.on("close", () => {
          if (!answer.complete) outgoing.destroy();
        });
      },
    );
    forward.on("error", () => outgoing.destroy());
    incoming.pipe(forward);
  });
  const tunnels = new Set<Socket>();
  server.on("upgrade", (incoming, socket: Socket, head: Buffer) => {
    requests.push(`UPGRADE ${incoming.url}`);
    const upstream = connect(Number(port), hostname, () => {
      const lines = [`${incoming.method} ${incoming.url} HTTP/1.1`];
      for (let i = 0; i < incoming.rawHeaders.length; i += 2)
        lines.push(`${incoming.rawHeaders[i]}: ${incoming.rawHeaders[i + 1]}`);
      upstream.write(`${lines.join("\r\n")}\r\n\r\n`);
      upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    for (const end of [socket, upstream]) {
      tunnels.add(end);
      // Either end gone (the server killed, the client away): the other goes too.
      const both = () => {
        socket.destroy();
        upstream.destroy();
      };
      end.on("error", both);
      end.on("close", () => {
        tunnels.delete(end);
        both();
      });
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port: own } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${own}`,
    requests,
    answers,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        for (const tunnel of tunnels) tunnel.destroy();
        server.close(() => resolve());
      }),
  };
}

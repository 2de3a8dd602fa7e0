// A plain HTTP proxy on loopback in front of a server, noting each request's method and path (with
// its query): how many requests a CLI command makes, seen from outside it. A WebSocket (an agent's
// connection) is passed through as it is, noted as `UPGRADE /path`.

import { createServer, request } from "node:http";
import { type AddressInfo, connect, type Socket } from "node:net";

export interface CountingProxy {
  /** The proxy's URL, for STEWARD_URL. */
  url: string;
  /** `METHOD /path?query` of each request passed on, in the order received. */
  requests: string[];
  close(): Promise<void>;
}

export async function countingProxy(target: string): Promise<CountingProxy> {
  const { hostname, port } = new URL(target);
  const requests: string[] = [];
  const server = createServer((incoming, outgoing) => {
    requests.push(`${incoming.method} ${incoming.url}`);
    const forward = request(
      { hostname, port, method: incoming.method, path: incoming.url, headers: incoming.headers },
      (answer) => {
        outgoing.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(outgoing);
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
      end.on("error", () => {
        socket.destroy();
        upstream.destroy();
      });
      end.on("close", () => tunnels.delete(end));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port: own } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${own}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        for (const tunnel of tunnels) tunnel.destroy();
        server.close(() => resolve());
      }),
  };
}

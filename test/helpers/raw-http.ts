// HTTP requests written byte by byte on a plain socket: bodies that lie about their length, end
// inside a part, or stop arriving, which fetch() cannot send.

import { connect, type Socket } from "node:net";

export interface RawAnswer {
  /** The status code, or null when the connection closed (or the wait ran out) before any answer. */
  status: number | null;
  body: string;
  /** From the last byte sent to the answer (or the close). */
  ms: number;
  /** The wait ran out with the connection still open and no answer. */
  timedOut: boolean;
}

export interface RawRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  /** What is sent after the headers; Content-Length is set from `contentLength`, else from this. */
  body: Buffer | string;
  contentLength?: number;
  /** How long to wait for an answer after the last byte sent. */
  timeoutMs?: number;
}

/** Sends the request on a new connection and reads one answer (its head and its Content-Length of body). */
export function rawRequest(url: string, request: RawRequest): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  const body = Buffer.from(request.body);
  const length = request.contentLength ?? body.length;
  const head = [
    `${request.method} ${request.path} HTTP/1.1`,
    `Host: ${hostname}:${port}`,
    `Content-Length: ${length}`,
    ...Object.entries(request.headers).map(([name, value]) => `${name}: ${value}`),
    "",
    "",
  ].join("\r\n");
  return new Promise((resolve) => {
    const socket: Socket = connect(Number(port), hostname);
    let received = Buffer.alloc(0);
    let sentAt = Date.now();
    let done = false;
    const finish = (answer: Omit<RawAnswer, "ms">) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ ...answer, ms: Date.now() - sentAt });
    };
    const timer = setTimeout(
      () => finish({ ...parse(received), timedOut: parse(received).status === null }),
      request.timeoutMs ?? 10_000,
    );
    socket.on("data", (chunk) => {
      received = Buffer.concat([received, chunk]);
      const answer = parse(received);
      if (answer.complete) finish({ status: answer.status, body: answer.body, timedOut: false });
    });
    socket.on("error", () => finish({ ...parse(received), timedOut: false }));
    socket.on("close", () => finish({ ...parse(received), timedOut: false }));
    socket.write(head);
    socket.write(body, () => {
      sentAt = Date.now();
    });
  });
}

function parse(received: Buffer): { status: number | null; body: string; complete: boolean } {
  const text = received.toString("latin1");
  const end = text.indexOf("\r\n\r\n");
  if (end < 0) return { status: null, body: "", complete: false };
  const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(text)?.[1] ?? Number.NaN);
  const length = Number(/\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end))?.[1] ?? Number.NaN);
  const body = received.subarray(end + 4).toString("utf8");
  return {
    status: Number.isNaN(status) ? null : status,
    body,
    complete: !Number.isNaN(length) && received.length - end - 4 >= length,
  };
}

/** A multipart/form-data body from its parts, each `{name, filename?, data}`; `closed: false` leaves out the closing boundary. */
export function multipartBody(
  boundary: string,
  parts: { name: string; filename?: string; data: string }[],
  closed = true,
): string {
  const lines = parts.map(
    (part) =>
      `--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"${part.filename ? `; filename="${part.filename}"\r\nContent-Type: application/octet-stream` : ""}\r\n\r\n${part.data}\r\n`,
  );
  return lines.join("") + (closed ? `--${boundary}--\r\n` : "");
}

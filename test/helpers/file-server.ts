// A real HTTP server on loopback (node:http) that serves files from memory, as a data server would:
// ETag and Last-Modified, conditional GETs (304), Range requests (206, with If-Range; 416 past the
// end), and what
// tests make go wrong: a transfer cut halfway, a transfer that trickles, answers of a given status.
// It counts the requests of each path, and the bodies it began to send.

import { createHash } from "node:crypto";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";

export interface ServedFile {
  content: Buffer;
  /** Answer with an ETag (default true), a Last-Modified (default true), Accept-Ranges (default true). */
  etag?: boolean;
  lastModified?: boolean;
  ranges?: boolean;
  /** The next this many answers with a body are cut (the socket destroyed) after `cutAfter` bytes. */
  cuts?: number;
  cutAfter?: number;
  /** The content once a transfer was cut (a file that changed between two tries). */
  afterCut?: Buffer;
  /** Send the body in chunks of this many bytes, one every `trickleMs` (a slow server). */
  trickleBytes?: number;
  trickleMs?: number;
  /** The next this many requests are answered with this status and no body. */
  failures?: number;
  failStatus?: number;
}

export interface RequestSeen {
  path: string;
  range: string | null;
  /** The Authorization header it came with. */
  authorization: string | null;
  status: number;
}

export interface FileServer {
  url: string;
  files: Map<string, ServedFile>;
  /** Every request, in order. */
  requests: RequestSeen[];
  /** Requests of a path answered with a body (200 or 206). */
  bodies(path: string): number;
  close(): Promise<void>;
}

const MODIFIED = new Date("2024-01-02T03:04:05Z").toUTCString();

function etagOf(content: Buffer): string {
  return `"${createHash("sha256").update(content).digest("hex").slice(0, 16)}"`;
}

export async function startFileServer(files: Record<string, ServedFile> = {}): Promise<FileServer> {
  const served = new Map(Object.entries(files));
  const requests: RequestSeen[] = [];
  const server: Server = createServer((request, response) => {
    const path = new URL(request.url ?? "/", "http://x").pathname;
    const seen: RequestSeen = {
      path,
      range: request.headers.range ?? null,
      authorization: request.headers.authorization ?? null,
      status: 0,
    };
    requests.push(seen);
    seen.status = answer(served.get(path), request, response);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}`,
    files: served,
    requests,
    bodies: (path) =>
      requests.filter((each) => each.path === path && (each.status === 200 || each.status === 206)).length,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Answers one request; returns its status. */
function answer(file: ServedFile | undefined, request: IncomingMessage, response: ServerResponse): number {
  if (!file) {
    response.writeHead(404).end("no such file");
    return 404;
  }
  if ((file.failures ?? 0) > 0) {
    file.failures = (file.failures ?? 0) - 1;
    const status = file.failStatus ?? 503;
    response.writeHead(status).end();
    return status;
  }
  const { content } = file;
  const headers: Record<string, string> = { "content-type": "application/octet-stream" };
  const etag = file.etag === false ? null : etagOf(content);
  if (etag) headers.etag = etag;
  if (file.lastModified !== false) headers["last-modified"] = MODIFIED;
  if (file.ranges !== false) headers["accept-ranges"] = "bytes";
  const ifNoneMatch = request.headers["if-none-match"];
  const ifModifiedSince = request.headers["if-modified-since"];
  const unchanged =
    (ifNoneMatch !== undefined && etag !== null && ifNoneMatch === etag) ||
    (ifNoneMatch === undefined && ifModifiedSince !== undefined && file.lastModified !== false);
  if (unchanged) {
    response.writeHead(304, headers).end();
    return 304;
  }
  let start = 0;
  let status = 200;
  const range = /^bytes=(\d+)-$/.exec(request.headers.range ?? "");
  const ifRange = request.headers["if-range"];
  const rangeHolds = ifRange === undefined || ifRange === etag || ifRange === MODIFIED;
  if (range && file.ranges !== false && rangeHolds && Number(range[1]) >= content.length) {
    response.writeHead(416, { ...headers, "content-range": `bytes */${content.length}` }).end();
    return 416;
  }
  if (range && file.ranges !== false && rangeHolds) {
    start = Number(range[1]);
    status = 206;
    headers["content-range"] = `bytes ${start}-${content.length - 1}/${content.length}`;
  }
  const body = content.subarray(start);
  headers["content-length"] = String(body.length);
  response.writeHead(status, headers);
  if (request.method === "HEAD") {
    response.end();
    return status;
  }
  let end = body.length;
  let cut = false;
  if ((file.cuts ?? 0) > 0) {
    file.cuts = (file.cuts ?? 0) - 1;
    end = Math.min(end, file.cutAfter ?? Math.floor(body.length / 2));
    cut = true;
    if (file.afterCut) {
      file.content = file.afterCut;
      file.afterCut = undefined;
    }
  }
  send(body.subarray(0, end), file, response, () => {
    if (cut) response.socket?.destroy();
    else response.end();
  });
  return status;
}

/** Writes `bytes` whole, or trickling as the file says, then calls `done`. */
function send(bytes: Buffer, file: ServedFile, response: ServerResponse, done: () => void): void {
  const size = file.trickleBytes;
  if (size === undefined) {
    response.write(bytes, () => done());
    return;
  }
  let offset = 0;
  const next = () => {
    if (response.destroyed) return;
    if (offset >= bytes.length) {
      done();
      return;
    }
    response.write(bytes.subarray(offset, offset + size));
    offset += size;
    setTimeout(next, file.trickleMs ?? 50);
  };
  next();
}

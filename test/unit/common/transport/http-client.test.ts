// The HTTP client against a real node:http server on a loopback port: what is tried again, what
// is not, and how a failure reads.

import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Readable } from "node:stream";
import { text } from "node:stream/consumers";
import { setTimeout as sleep } from "node:timers/promises";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  DEFAULT_RETRY,
  HttpClient,
  HttpError,
  RETRY_BUDGET_MS,
  RETRY_FIRST_DELAY_MS,
  RETRY_MAX_DELAY_MS,
  RETRY_STATUSES,
  retryAfterMs,
  retryDelayMs,
} from "../../../../src/common/transport/http-client.ts";
import { startForwarder } from "../../../helpers/tcp-forwarder.ts";

interface Seen {
  method: string;
  url: string;
  body: string;
  authorization: string | undefined;
}

type Handler = (request: IncomingMessage, response: ServerResponse, body: string, count: number) => void;

const servers: Server[] = [];
const closing: (() => Promise<void>)[] = [];

/** A server whose handler sees each request with its whole body and its number (1, 2, ...). */
async function serve(handler: Handler, port = 0): Promise<{ url: string; seen: Seen[]; server: Server }> {
  const seen: Seen[] = [];
  const server = createServer(async (request, response) => {
    const body = await text(request);
    seen.push({
      method: request.method ?? "",
      url: request.url ?? "",
      body,
      authorization: request.headers.authorization,
    });
    handler(request, response, body, seen.length);
  });
  servers.push(server);
  await new Promise<void>((done) => server.listen(port, "127.0.0.1", done));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen, server };
}

/** A loopback port with nothing listening on it. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as AddressInfo;
  await new Promise((done) => server.close(done));
  return port;
}

/** Cuts the connection with a reset, once the request (and its body) has arrived. */
function reset(request: IncomingMessage): void {
  request.socket.resetAndDestroy();
}

function ok(response: ServerResponse, body = "ok"): void {
  response.writeHead(200, { "content-type": "text/plain", connection: "close" });
  response.end(body);
}

afterEach(async () => {
  for (const close of closing.splice(0)) await close();
  for (const server of servers.splice(0)) {
    server.closeAllConnections();
    await new Promise((done) => server.close(done));
  }
});

describe("retry rules", () => {
  it("backs off from 100 ms, doubling per round up to 2 s, within a 30 s budget", () => {
    expect([RETRY_FIRST_DELAY_MS, RETRY_MAX_DELAY_MS, RETRY_BUDGET_MS]).toEqual([100, 2_000, 30_000]);
    expect(RETRY_STATUSES).toEqual([503]);
    expect([1, 2, 3, 4, 5, 6, 7, 50].map((rounds) => retryDelayMs(rounds, 1))).toEqual([
      100, 200, 400, 800, 1600, 2000, 2000, 2000,
    ]);
  });

  it.each([
    // rounds, random, ms
    [1, 0, 50],
    [1, 0.5, 75],
    [2, 0, 100],
    [3, 0.25, 250],
    [6, 0, 1000],
    [100, 0.5, 1500],
  ])("after %d rounds with random %d: %d ms", (rounds, random, ms) => {
    expect(retryDelayMs(rounds, random, DEFAULT_RETRY)).toBe(ms);
  });

  it.each([
    ["3", 3000],
    [" 0 ", 0],
    ["Thu, 01 Jan 1970 00:00:05 GMT", 4000],
    ["Thu, 01 Jan 1970 00:00:00 GMT", 0],
    ["soon", null],
    ["", null],
    [null, null],
  ])("Retry-After %j: %j ms", (header, ms) => {
    expect(retryAfterMs(header, 1000)).toBe(ms);
  });
});

describe("HttpClient", () => {
  it("tries a refused POST again until the server is up, and sends the token", async () => {
    const port = await closedPort();
    const client = new HttpClient({ baseUrl: `http://127.0.0.1:${port}`, token: "secret" });
    const answer = client.request({ method: "POST", path: "/jobs", json: { command: "true" } });
    await sleep(400);
    const { seen } = await serve((_request, response) => ok(response, "created"), port);
    const response = await answer;
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("created");
    expect(seen).toEqual([
      { method: "POST", url: "/jobs", body: '{"command":"true"}', authorization: "Bearer secret" },
    ]);
  });

  it("tries again after a 503, waiting as long as its Retry-After says", async () => {
    const { url, seen } = await serve((_request, response, _body, count) => {
      if (count === 1) {
        response.writeHead(503, { "retry-after": "1" });
        response.end("standby");
      } else ok(response);
    });
    const client = new HttpClient({ baseUrl: url });
    const started = Date.now();
    const response = await client.request({ path: "/api/v1/jobs" });
    expect(response.status).toBe(200);
    expect(Date.now() - started).toBeGreaterThanOrEqual(1000);
    expect(seen).toHaveLength(2);
  });

  it("answers the last 503 when the budget runs out, and does not repeat a POST's 503", async () => {
    const { url, seen } = await serve((_request, response) => {
      response.writeHead(503);
      response.end("busy");
    });
    const client = new HttpClient({ baseUrl: url, retry: { budgetMs: 300 } });
    const get = await client.request({ path: "/x" });
    expect(get.status).toBe(503);
    expect(await get.text()).toBe("busy");
    const tries = seen.length;
    expect(tries).toBeGreaterThan(1);
    const post = await client.request({ method: "POST", path: "/x", body: "once" });
    expect(post.status).toBe(503);
    expect(seen).toHaveLength(tries + 1);
  });

  it.each([
    { step: "forward", by: 3_600_000 },
    { step: "back", by: -3_600_000 },
  ])(
    "measures its budget by the monotonic clock: the wall clock stepped an hour $step changes nothing",
    async ({ by }) => {
      // Only Date is faked: the server steps it at the first request, between the client's tries.
      vi.useFakeTimers({ toFake: ["Date"], now: Date.now() });
      try {
        const { url, seen } = await serve((_request, response, _body, count) => {
          if (count === 1) vi.setSystemTime(Date.now() + by);
          response.writeHead(503);
          response.end("busy");
        });
        const client = new HttpClient({ baseUrl: url, retry: { budgetMs: 1000 } });
        const started = performance.now();
        const answer = await client.request({ path: "/x" });
        expect(answer.status).toBe(503);
        // Tried again within the budget (not given up at once), and not past it (not for an hour).
        expect(seen.length).toBeGreaterThan(1);
        expect(performance.now() - started).toBeGreaterThanOrEqual(500);
        expect(performance.now() - started).toBeLessThan(3000);
      } finally {
        vi.useRealTimers();
      }
    },
  );

  it("tries a GET again when its connection is reset before the answer", async () => {
    const { url, seen } = await serve((request, response, _body, count) => {
      if (count === 1) reset(request);
      else ok(response, "second");
    });
    const response = await new HttpClient({ baseUrl: url }).request({ path: "/outputs/total" });
    expect(await response.text()).toBe("second");
    expect(seen.map((request) => request.method)).toEqual(["GET", "GET"]);
  });

  it("does not send a POST again once its connection broke after the body went out", async () => {
    const { url, seen } = await serve((request) => reset(request));
    const client = new HttpClient({ baseUrl: url });
    const error = await client
      .request({ method: "POST", path: "/api/v1/jobs?x=1", json: { a: 1 } })
      .catch((e) => e);
    expect(error).toBeInstanceOf(HttpError);
    expect(error.failure).toBe("lost");
    expect(error.uncertain).toBe(true);
    expect(error.tries).toBe(1);
    expect(error.message).toBe(
      `POST ${url}/api/v1/jobs: read ECONNRESET (not tried again: the server may have acted on it)`,
    );
    expect(seen).toEqual([
      { method: "POST", url: "/api/v1/jobs?x=1", body: '{"a":1}', authorization: undefined },
    ]);
  });

  it("sends a POST marked idempotent again after a broken connection", async () => {
    const { url, seen } = await serve((request, response, _body, count) => {
      if (count === 1) request.socket.destroy();
      else ok(response);
    });
    const response = await new HttpClient({ baseUrl: url }).request({
      method: "POST",
      path: "/checkpoint",
      body: "manifest",
      idempotent: true,
    });
    expect(response.status).toBe(200);
    expect(seen.map((request) => request.body)).toEqual(["manifest", "manifest"]);
  });

  it("makes a stream body again from its factory for each try, and sends it whole", async () => {
    const { url, seen } = await serve((request, response, _body, count) => {
      if (count === 1) reset(request);
      else ok(response);
    });
    const parts = ["first part, ", "second part, ", "last part"];
    let made = 0;
    const response = await new HttpClient({ baseUrl: url }).request({
      method: "PUT",
      path: "/outputs/big",
      body: () => {
        made++;
        return Readable.from(parts.map((part) => Buffer.from(part)));
      },
    });
    expect(response.status).toBe(200);
    expect(made).toBe(2);
    expect(seen.map((request) => request.body)).toEqual([parts.join(""), parts.join("")]);
  });

  it("does not send a one-shot stream twice", async () => {
    const { url, seen } = await serve((request) => reset(request));
    const error = await new HttpClient({ baseUrl: url })
      .request({ method: "PUT", path: "/outputs/big", body: Readable.from([Buffer.from("once")]) })
      .catch((e) => e);
    expect(error).toBeInstanceOf(HttpError);
    expect(error.message).toContain("not tried again: its body was a stream without a factory");
    expect(seen).toHaveLength(1);
  });

  it("times a try out, and tries an idempotent request again after a timeout", async () => {
    const { url, seen } = await serve((_request, response, _body, count) => {
      if (count === 2) ok(response);
    });
    const client = new HttpClient({ baseUrl: url });
    const response = await client.request({ path: "/slow", timeoutMs: 200 });
    expect(response.status).toBe(200);
    expect(seen).toHaveLength(2);

    const posted = await client.request({ method: "POST", path: "/slow", timeoutMs: 200 }).catch((e) => e);
    expect(posted).toBeInstanceOf(HttpError);
    expect(posted.failure).toBe("timeout");
    expect(posted.message).toBe(
      `POST ${url}/slow: no answer within 200 ms (not tried again: the server may have acted on it)`,
    );
  });

  it("an upload over a link slower than a body is allowed goes through: a try that timed out sending it gives the next more time", async () => {
    const { url, seen } = await serve((_request, response) => ok(response));
    const target = new URL(url);
    const forwarder = await startForwarder({ target: { host: target.hostname, port: Number(target.port) } });
    closing.push(() => forwarder.close());
    // 64 KiB at 64 KiB/s takes a second; the first try allows 500 ms to answer and 62.5 ms for it.
    forwarder.setMode({ kind: "throttle", bytesPerSecond: 64 * 1024 });
    const client = new HttpClient({
      baseUrl: `http://${forwarder.host}:${forwarder.port}`,
      answerTimeoutMs: 500,
      retry: { budgetMs: 15_000 },
    });
    const body = new Uint8Array(64 * 1024).fill(120);
    const response = await client.request({ method: "PUT", path: "/out", body: () => new Blob([body]) });
    expect(response.status).toBe(200);
    expect(seen.some((each) => each.body.length === body.length)).toBe(true);
  }, 30_000);

  it("leaves the answer's body to the caller: the timeout ends at the headers, the signal does not", async () => {
    const { url } = await serve((_request, response) => {
      response.writeHead(200, { "content-type": "text/plain" });
      response.write("line 1\n");
      setTimeout(() => response.end("line 2\n"), 400);
    });
    const client = new HttpClient({ baseUrl: url });
    const followed = await client.request({ path: "/logs?follow=1", timeoutMs: 200 });
    expect(await followed.text()).toBe("line 1\nline 2\n");

    const controller = new AbortController();
    const cut = await client.request({ path: "/logs?follow=1", signal: controller.signal });
    const reader = cut.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("line 1\n");
    controller.abort();
    await expect(reader.read()).rejects.toThrow();
  });

  it("gives up when the budget is spent, in one line naming the method, the URL and the cause", async () => {
    const port = await closedPort();
    const client = new HttpClient({ baseUrl: `http://127.0.0.1:${port}`, retry: { budgetMs: 500 } });
    const started = Date.now();
    const error = await client.request({ method: "GET", path: "/api/v1/hosts" }).catch((e) => e);
    const elapsed = Date.now() - started;
    expect(error).toBeInstanceOf(HttpError);
    expect(error.failure).toBe("refused");
    expect(error.detail).toBe(`connect ECONNREFUSED 127.0.0.1:${port}`);
    expect(error.tries).toBeGreaterThan(2);
    expect(error.message).toMatch(
      new RegExp(
        `^GET http://127\\.0\\.0\\.1:${port}/api/v1/hosts: connect ECONNREFUSED 127\\.0\\.0\\.1:${port} \\(gave up after ${error.tries} tries in \\d+\\.\\d s\\)$`,
      ),
    );
    expect(elapsed).toBeLessThan(2000);
  });

  it("stops at maxTries, and makes a single try with retry: false", async () => {
    const port = await closedPort();
    const client = new HttpClient({ baseUrl: `http://127.0.0.1:${port}`, retry: { maxTries: 3 } });
    expect((await client.request({ path: "/" }).catch((e) => e)).tries).toBe(3);
    expect((await client.request({ path: "/", retry: false }).catch((e) => e)).tries).toBe(1);
  });

  it("stops at once when the caller aborts, with the caller's reason", async () => {
    const port = await closedPort();
    const client = new HttpClient({ baseUrl: `http://127.0.0.1:${port}` });
    const controller = new AbortController();
    setTimeout(() => controller.abort(new Error("user gave up")), 300);
    const started = Date.now();
    const error = await client.request({ path: "/", signal: controller.signal }).catch((e) => e);
    expect(error.message).toBe("user gave up");
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it("moves to the next server on a connection error, and keeps to the one that answered", async () => {
    const down = `http://127.0.0.1:${await closedPort()}`;
    const { url, seen } = await serve((_request, response) => ok(response));
    const client = new HttpClient({ baseUrl: [down, url] });
    const started = Date.now();
    expect((await client.request({ path: "/a" })).status).toBe(200);
    expect((await client.request({ path: "/b" })).status).toBe(200);
    // No back-off between the two servers of a round.
    expect(Date.now() - started).toBeLessThan(RETRY_FIRST_DELAY_MS * 5);
    expect(seen.map((request) => request.url)).toEqual(["/a", "/b"]);
  });

  it("asks a base URL function again at every try", async () => {
    const down = `http://127.0.0.1:${await closedPort()}`;
    const { url } = await serve((_request, response) => ok(response));
    const asked: string[] = [];
    const client = new HttpClient({
      baseUrl: () => {
        const base = asked.length === 0 ? down : url;
        asked.push(base);
        return base;
      },
    });
    expect((await client.request({ path: "/" })).status).toBe(200);
    expect(asked).toEqual([down, url]);
  });
});

describe("a standby's redirect to the leader", () => {
  it("is followed to another of the client's servers with the token and the body", async () => {
    const leader = await serve((_request, response) => ok(response, "led"));
    const standby = await serve((request, response) => {
      response.writeHead(307, { location: leader.url + (request.url ?? ""), connection: "close" });
      response.end();
    });
    // Only a server the client was given may have the token (test/security/redirects.test.ts).
    const client = new HttpClient({ baseUrl: [standby.url, leader.url], token: "secret" });
    const response = await client.request({ method: "POST", path: "/api/v1/jobs?x=1", body: "job" });
    expect(await response.text()).toBe("led");
    expect(leader.seen).toStrictEqual([
      { method: "POST", url: "/api/v1/jobs?x=1", body: "job", authorization: "Bearer secret" },
    ]);
  });

  it("is not followed forever", async () => {
    const looping = await serve((request, response) => {
      response.writeHead(307, { location: request.url ?? "/", connection: "close" });
      response.end();
    });
    // Followed MAX_REDIRECTS times a round, then tried again after a back-off, within the tries allowed.
    const client = new HttpClient({ baseUrl: looping.url, retry: { maxTries: 8 } });
    const response = await client.request({ path: "/again" });
    expect(response.status).toBe(307);
    expect(looping.seen).toHaveLength(8);
  });
});

describe("answerTimeoutMs", () => {
  it("skips a server that does not start answering in time, for the next one", async () => {
    const silent = await serve(() => {});
    const answering = await serve((_request, response) => ok(response, "here"));
    const client = new HttpClient({ baseUrl: [silent.url, answering.url], answerTimeoutMs: 300 });
    const started = Date.now();
    const response = await client.request({ path: "/api/v1/jobs" });
    expect(await response.text()).toBe("here");
    expect(Date.now() - started).toBeLessThan(2000);
  });
});

import { createServer, type IncomingMessage } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { text } from "node:stream/consumers";
import { setTimeout as sleep } from "node:timers/promises";
import { describe, expect, it, vi } from "vitest";
import {
  bodyTimeoutAnswer,
  hasBody,
  isBodyStalled,
  watchBodyTimeouts,
} from "../../../../src/broker/api/body-timeout.ts";

describe("isBodyStalled", () => {
  it.each([
    // now, last progress, bytes buffered unread, timeout -> stalled
    [1000, 0, 0, 1000, true],
    [999, 0, 0, 1000, false],
    [5000, 0, 16_384, 1000, false], // the server is the slow reader: not the client's stall
    [5000, 4500, 0, 1000, false],
    [60_000, 0, 0, 60_000, true],
  ])(
    "at %i ms, progress at %i, %i bytes buffered, timeout %i: %s",
    (now, last, buffered, timeout, stalled) => {
      expect(isBodyStalled(now, last, buffered, timeout)).toBe(stalled);
    },
  );
});

describe("hasBody", () => {
  const request = (headers: Record<string, string>) => ({ headers }) as unknown as IncomingMessage;
  it.each([
    [{}, false],
    [{ "content-length": "0" }, false],
    [{ "content-length": "12" }, true],
    [{ "content-length": "nonsense" }, false],
    [{ "transfer-encoding": "chunked" }, true],
  ])("%o: %s", (headers, expected) => {
    expect(hasBody(request(headers))).toBe(expected);
  });
});

it("the 408 answer is a whole HTTP response whose body is as long as it says", () => {
  const answer = bodyTimeoutAnswer(60);
  const [head, body] = answer.split("\r\n\r\n");
  expect(head.split("\r\n")[0]).toBe("HTTP/1.1 408 Request Timeout");
  expect(head).toContain("Connection: close");
  expect(Number(/Content-Length: (\d+)/.exec(head)?.[1])).toBe(Buffer.byteLength(body));
  expect(JSON.parse(body).error).toStrictEqual({
    code: "body_timeout",
    message: "the request body stopped arriving: no byte for 60 s (--body-timeout-seconds)",
  });
});

describe("watchBodyTimeouts with the wall clock stepped", () => {
  /**
   * A real server watching bodies with a 1 s timeout; the client sends half a body, the wall clock
   * is stepped by `by` ms (only Date is faked) after 200 ms, and the other half follows `restAfterMs`
   * later (never, when null). Answers what the client read and whether the server took it for stalled.
   */
  async function upload(
    by: number,
    restAfterMs: number | null,
  ): Promise<{ answer: string; stalled: boolean }> {
    vi.useFakeTimers({ toFake: ["Date"], now: Date.now() });
    let stalled = false;
    const server = createServer(async (request, response) => {
      const body = await text(request).catch(() => "");
      if (!response.headersSent && response.writable) response.end(`got ${body}`);
    });
    watchBodyTimeouts(server, 1, () => {
      stalled = true;
    });
    await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
    try {
      const socket = connect((server.address() as AddressInfo).port, "127.0.0.1");
      const answer = text(socket);
      socket.write("POST /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 10\r\n\r\nhello");
      await sleep(200);
      vi.setSystemTime(Date.now() + by);
      if (restAfterMs !== null) {
        await sleep(restAfterMs);
        socket.write("world");
      }
      return { answer: await answer, stalled };
    } finally {
      vi.useRealTimers();
      server.closeAllConnections();
      await new Promise((done) => server.close(done));
    }
  }

  it("an hour forward: a body that goes on after a pause shorter than the timeout is taken", async () => {
    const { answer, stalled } = await upload(3_600_000, 400);
    expect(stalled).toBe(false);
    expect(answer).toMatch(/got helloworld$/);
  });

  it("an hour back: a body that stops is still dropped after the timeout, not an hour later", async () => {
    const started = performance.now();
    const { answer, stalled } = await upload(-3_600_000, null);
    expect(stalled).toBe(true);
    expect(answer).toContain("408 Request Timeout");
    expect(performance.now() - started).toBeLessThan(3000);
  });
});

import type { IncomingMessage } from "node:http";
import { describe, expect, it } from "vitest";
import { bodyTimeoutAnswer, hasBody, isBodyStalled } from "../../../../src/broker/api/body-timeout.ts";

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

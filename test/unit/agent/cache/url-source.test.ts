// A URL input's server as a download source, against a real HTTP server on loopback: credentials in
// the URL go as Basic authorization (fetch takes none in the URL) and never into the name messages
// show, which has no query either.

import { afterEach, beforeEach, expect, it } from "vitest";
import { urlSource } from "../../../../src/agent/cache/url-source.ts";
import { type FileServer, startFileServer } from "../../../helpers/file-server.ts";

let server: FileServer;
beforeEach(async () => {
  server = await startFileServer({ "/a%20b.txt": { content: Buffer.from("content") } });
});
afterEach(() => server.close());

it("sends a URL's credentials as Basic authorization, and names it without them or its query", async () => {
  const url = server.url.replace("http://", "http://ann:p%40ss@");
  const source = urlSource(`${url}/a%20b.txt?sig=secret`);
  expect(source.name).toBe(`${server.url}/a%20b.txt`);
  const response = await source.open({ range: "bytes=2-" }, new AbortController().signal);
  expect(response.status).toBe(206);
  expect(await response.text()).toBe("ntent");
  expect(server.requests[0]).toMatchObject({
    path: "/a%20b.txt",
    range: "bytes=2-",
    authorization: `Basic ${Buffer.from("ann:p@ss").toString("base64")}`,
  });
});

it("sends no authorization for a URL without credentials", async () => {
  const response = await urlSource(`${server.url}/a%20b.txt`).open({}, new AbortController().signal);
  expect(await response.text()).toBe("content");
  expect(server.requests[0].authorization).toBeNull();
});

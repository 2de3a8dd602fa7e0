// The server's input route answers byte ranges, so that an agent's download of a large uploaded
// input cut halfway resumes where it stopped. A real server: a hand-driven host with an attempt of
// the job asks for parts of its input (206 and Content-Range, 416 past the end, If-Range matched
// against the ETag, the input's digest); a real agent whose download of the input a proxy breaks
// halfway asks for the rest with a Range tied by If-Range, gets a 206, and the task succeeds with
// the file whole, the server having sent its bytes once.

import { createHash, randomBytes } from "node:crypto";
import { Agent, request } from "node:http";
import type { Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { ServerMessage, StartMessage } from "../../src/common/protocol/messages.ts";
import { type CountingProxy, countingProxy } from "../helpers/counting-proxy.ts";
import { credentialOf, rawHello } from "../helpers/raw-agent.ts";
import {
  type AgentProcess,
  cleanup,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";
import { submitUploading } from "../helpers/submit-uploading.ts";

const INPUT = randomBytes(2 * 1024 * 1024);
const DIGEST = createHash("sha256").update(INPUT).digest("hex");
const ETAG = `"${DIGEST}"`;

let server: (StewardProcess & { joinToken: string }) | undefined;

beforeAll(async () => {
  server = await startServerProcess();
});

afterAll(async () => {
  await server?.stop();
  cleanup(server?.data ?? "");
});

/** Submits a job with `data.bin` uploaded; its id. */
function submitWithInput(job: Record<string, unknown>): Promise<string> {
  return submitUploading(server!, job, { "data.bin": INPUT });
}

describe("the input route, asked by a host with an attempt of the job", () => {
  let credential = "";
  let route = "";
  let start: StartMessage | undefined;
  let close = () => {};

  beforeAll(async () => {
    const { ws, answer } = await rawHello(server!.url, { name: "ranged", token: server!.joinToken });
    close = () => ws.close();
    credential = credentialOf(answer);
    const frames: ServerMessage[] = [];
    ws.on("message", (data) => frames.push(JSON.parse(String(data)) as ServerMessage));
    const id = await submitWithInput({ command: "sleep 1000", requirements: 'host.name == "ranged"' });
    start = await waitFor("the start", () =>
      frames.find((frame): frame is StartMessage => frame.type === "start"),
    );
    route = `${server!.url}/api/v1/agent/jobs/${id}/inputs/data.bin`;
  });

  afterAll(() => close());

  const ask = (headers: Record<string, string>, method = "GET") =>
    fetch(route, { method, headers: { authorization: `Bearer ${credential}`, ...headers } });

  it("comes with the input's digest in its start", () => {
    expect(start?.inputDigests).toStrictEqual({ "data.bin": DIGEST });
  });

  it("answers the whole file with its ETag and Accept-Ranges", async () => {
    const whole = await ask({});
    expect(whole.status).toBe(200);
    expect(whole.headers.get("etag")).toBe(ETAG);
    expect(whole.headers.get("accept-ranges")).toBe("bytes");
    expect(Buffer.from(await whole.arrayBuffer()).equals(INPUT)).toBe(true);
  });

  it("answers a range with its part (206, Content-Range), to the end or closed", async () => {
    const closed = await ask({ range: "bytes=1000-1999" });
    expect(closed.status).toBe(206);
    expect(closed.headers.get("content-range")).toBe(`bytes 1000-1999/${INPUT.length}`);
    expect(closed.headers.get("content-length")).toBe("1000");
    expect(Buffer.from(await closed.arrayBuffer()).equals(INPUT.subarray(1000, 2000))).toBe(true);
    const from = INPUT.length - 100_000;
    const rest = await ask({ range: `bytes=${from}-`, "if-range": ETAG });
    expect(rest.status).toBe(206);
    expect(rest.headers.get("content-range")).toBe(`bytes ${from}-${INPUT.length - 1}/${INPUT.length}`);
    expect(Buffer.from(await rest.arrayBuffer()).equals(INPUT.subarray(from))).toBe(true);
  });

  it("sends the part's bytes alone: the connection serves the next request", async () => {
    // Two ranged GETs on one kept-alive connection: a part followed by more of the file would break it.
    const keepAlive = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      const sockets: Socket[] = [];
      for (const range of ["bytes=0-99", "bytes=100-199"]) {
        const body = await new Promise<Buffer>((resolve, reject) => {
          const sent = request(
            route,
            { agent: keepAlive, headers: { authorization: `Bearer ${credential}`, range } },
            (answer) => {
              sockets.push(answer.socket);
              const chunks: Buffer[] = [];
              answer.on("data", (chunk: Buffer) => chunks.push(chunk));
              answer.on("end", () => resolve(Buffer.concat(chunks)));
            },
          );
          sent.on("error", reject);
          sent.end();
        });
        const from = Number(range.slice(6, range.indexOf("-")));
        expect(body.equals(INPUT.subarray(from, from + 100))).toBe(true);
        // Let the server see the end of the answer before the next request is written.
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      expect(sockets[1]).toBe(sockets[0]);
      expect(sockets[0].destroyed).toBe(false);
    } finally {
      keepAlive.destroy();
    }
  });

  it("answers 416 with the file's size to a range past its end", async () => {
    const past = await ask({ range: `bytes=${INPUT.length}-` });
    expect(past.status).toBe(416);
    expect(past.headers.get("content-range")).toBe(`bytes */${INPUT.length}`);
    expect(((await past.json()) as { error: { code: string } }).error.code).toBe("range_not_satisfiable");
  });

  it("answers the whole file when If-Range names another version", async () => {
    const other = await ask({ range: "bytes=1000-", "if-range": `"${"0".repeat(64)}"` });
    expect(other.status).toBe(200);
    expect(other.headers.get("content-range")).toBeNull();
    expect(Buffer.from(await other.arrayBuffer()).equals(INPUT)).toBe(true);
  });

  it("answers a HEAD with a range with the part's headers alone", async () => {
    const head = await ask({ range: "bytes=0-9" }, "HEAD");
    expect(head.status).toBe(206);
    expect(head.headers.get("content-range")).toBe(`bytes 0-9/${INPUT.length}`);
    expect(head.headers.get("content-length")).toBe("10");
  });
});

describe("an agent's download of an input, broken halfway", () => {
  const CUT = 700_000;
  let proxy: CountingProxy | undefined;
  let agent: AgentProcess | undefined;

  beforeAll(async () => {
    let cuts = 0;
    proxy = await countingProxy(server!.url, {
      // The first GET of an input is broken after CUT bytes of its body.
      cutAfter: (request) => (/^GET .*\/inputs\//.test(request) && cuts++ === 0 ? CUT : null),
    });
    agent = await startAgentProcess({ name: "resumer", servers: [proxy.url], joinToken: server!.joinToken });
  });

  afterAll(async () => {
    await agent?.stop();
    await proxy?.close();
    cleanup(agent?.work ?? "");
  });

  it("asks for the rest with a Range tied to the file's ETag, and the task has the file whole", async () => {
    const check = `test "$(sha256sum data.bin | cut -d' ' -f1)" = ${DIGEST}`;
    const id = await submitWithInput({ command: check, requirements: 'host.name == "resumer"' });
    const ended = await waitForJobEnd(server!, id);
    expect(ended.state).toBe("succeeded");
    const asked = proxy!.answers.filter((answer) => answer.request.endsWith(`/jobs/${id}/inputs/data.bin`));
    expect(asked.map(({ status, cut }) => ({ status, cut }))).toStrictEqual([
      { status: 200, cut: true },
      { status: 206, cut: false },
    ]);
    const [first, rest] = asked;
    expect(first.bytes).toBe(CUT);
    expect(rest.range).toBe(`bytes=${CUT}-`);
    expect(rest.ifRange).toBe(ETAG);
    // The server sent each byte once: the part before the break, then the rest.
    expect(first.bytes + rest.bytes).toBe(INPUT.length);
  });
});

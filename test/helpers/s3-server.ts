// A real S3-compatible server on loopback for tests: s3rver (@20minutes/s3rver, Koa, which checks
// AWS Signature V4 and has one account, access key S3RVER with secret S3RVER), in this process, on
// a free port, its objects in a temporary folder; behind a plain HTTP proxy that notes each request
// (method, path, Range, status) and can cut the next answers of a path after some bytes (a transfer
// broken halfway). The Host header goes through as it came, so signatures made for the proxy's
// address hold. s3rver has no bucket policies: a bucket it refuses is one it does not have (404), a
// request it refuses one whose signature or key is wrong (403).

import { createServer, request } from "node:http";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import aws4 from "aws4";
import { tempDir } from "./steward.ts";

/** s3rver's one account. */
/** The AWS settings an agent reads (s3-settings.ts): those of the test's own environment must not reach it. */
const AWS_VARIABLES = [
  "AWS_ACCESS_KEY_ID",
  "AWS_SECRET_ACCESS_KEY",
  "AWS_SESSION_TOKEN",
  "AWS_REGION",
  "AWS_DEFAULT_REGION",
  "AWS_ENDPOINT_URL",
  "AWS_ENDPOINT_URL_S3",
  "AWS_PROFILE",
  "AWS_SHARED_CREDENTIALS_FILE",
  "AWS_CONFIG_FILE",
];

/** `env` arguments that start a process without any of the AWS settings of the test's environment. */
export function withoutAwsSettings(): string[] {
  return AWS_VARIABLES.flatMap((name) => ["-u", name]);
}

export const S3RVER_KEY = "S3RVER";
export const S3RVER_SECRET = "S3RVER";

interface S3rverOptions {
  address: string;
  port: number;
  silent: boolean;
  directory: string;
  configureBuckets: { name: string }[];
}

interface S3rverInstance {
  run(): Promise<AddressInfo>;
  close(): Promise<void>;
}

const S3rver = createRequire(import.meta.url)("@20minutes/s3rver") as new (
  options: S3rverOptions,
) => S3rverInstance;

/** s3rver's one account, which takes more key pairs (each signs as the account). */
const S3RVER_ACCOUNT = (
  createRequire(import.meta.url)("@20minutes/s3rver/lib/models/account.js") as {
    DUMMY_ACCOUNT: { createKeyPair(key: string, secret: string): void; revokeAccessKey(key: string): void };
  }
).DUMMY_ACCOUNT;

/**
 * Lets `key` with `secret` in, beside S3RVER's pair, in every s3rver of this process (until
 * `removeS3Key`): a pair of values a test can look for where they must never show.
 */
export function addS3Key(key: string, secret: string): void {
  S3RVER_ACCOUNT.createKeyPair(key, secret);
}

export function removeS3Key(key: string): void {
  S3RVER_ACCOUNT.revokeAccessKey(key);
}

export interface S3RequestSeen {
  method: string;
  /** The path, `/bucket/key`. */
  path: string;
  range: string | null;
  status: number;
  /** Whether it came signed (an Authorization header). */
  signed: boolean;
}

export interface S3Server {
  /** The endpoint the agents are given (the proxy's). */
  url: string;
  folder: string;
  requests: S3RequestSeen[];
  /** The next `times` answers to a GET of `path` are cut after `afterBytes` bytes of body. */
  cut(path: string, afterBytes: number, times?: number): void;
  /** Puts an object, signed with s3rver's account. */
  put(bucket: string, key: string, content: Buffer | string): Promise<void>;
  /** Gets an object (null when there is none), signed with s3rver's account. */
  get(bucket: string, key: string): Promise<Buffer | null>;
  close(): Promise<void>;
}

export async function startS3Server(buckets: string[]): Promise<S3Server> {
  const folder = tempDir("steward-s3rver-");
  const s3rver = new S3rver({
    address: "127.0.0.1",
    port: 0,
    silent: true,
    directory: folder,
    configureBuckets: buckets.map((name) => ({ name })),
  });
  const { port: backend } = await s3rver.run();
  const requests: S3RequestSeen[] = [];
  const cuts = new Map<string, { afterBytes: number; times: number }>();
  const proxy = createServer((incoming, outgoing) => {
    const path = new URL(incoming.url ?? "/", "http://x").pathname;
    const seen: S3RequestSeen = {
      method: incoming.method ?? "GET",
      path: decodeURIComponent(path),
      range: incoming.headers.range ?? null,
      status: 0,
      signed: incoming.headers.authorization !== undefined,
    };
    requests.push(seen);
    const cut = incoming.method === "GET" ? cuts.get(seen.path) : undefined;
    const forward = request(
      {
        hostname: "127.0.0.1",
        port: backend,
        method: incoming.method,
        path: incoming.url,
        headers: incoming.headers,
      },
      (answer) => {
        seen.status = answer.statusCode ?? 502;
        outgoing.writeHead(seen.status, answer.headers);
        if (!cut || cut.times <= 0 || (seen.status !== 200 && seen.status !== 206)) {
          answer.pipe(outgoing);
          return;
        }
        cut.times--;
        let sent = 0;
        answer.on("data", (chunk: Buffer) => {
          if (sent >= cut.afterBytes) return;
          const part = chunk.subarray(0, cut.afterBytes - sent);
          sent += part.length;
          outgoing.write(part);
          if (sent >= cut.afterBytes) {
            answer.destroy();
            outgoing.socket?.destroy();
          }
        });
      },
    );
    forward.on("error", () => outgoing.destroy());
    incoming.pipe(forward);
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;

  /** A request to s3rver directly, signed with its account. */
  async function signed(
    method: "GET" | "PUT",
    bucket: string,
    key: string,
    body?: Buffer,
  ): Promise<Response> {
    const options = {
      host: `127.0.0.1:${backend}`,
      path: `/${bucket}/${key.split("/").map(encodeURIComponent).join("/")}`,
      method,
      service: "s3",
      region: "us-east-1",
      headers: { "x-amz-content-sha256": "UNSIGNED-PAYLOAD" } as Record<string, string>,
    };
    aws4.sign(options, { accessKeyId: S3RVER_KEY, secretAccessKey: S3RVER_SECRET });
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(options.headers))
      if (name.toLowerCase() !== "host") headers[name] = String(value);
    return fetch(`http://127.0.0.1:${backend}${options.path}`, {
      method,
      headers,
      ...(body ? { body: new Uint8Array(body) } : {}),
    });
  }

  return {
    url,
    folder,
    requests,
    cut(path, afterBytes, times = 1) {
      cuts.set(path, { afterBytes, times });
    },
    async put(bucket, key, content) {
      const response = await signed("PUT", bucket, key, Buffer.from(content));
      if (!response.ok)
        throw new Error(`PUT /${bucket}/${key}: HTTP ${response.status} ${await response.text()}`);
      await response.arrayBuffer();
    },
    async get(bucket, key) {
      const response = await signed("GET", bucket, key);
      if (response.status === 404) {
        await response.arrayBuffer();
        return null;
      }
      if (!response.ok)
        throw new Error(`GET /${bucket}/${key}: HTTP ${response.status} ${await response.text()}`);
      return Buffer.from(await response.arrayBuffer());
    },
    async close() {
      await new Promise<void>((resolve) => {
        proxy.closeAllConnections();
        proxy.close(() => resolve());
      });
      await s3rver.close();
    },
  };
}

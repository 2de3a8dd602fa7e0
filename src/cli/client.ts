// The CLI's way to the API: STEWARD_URL (a comma-separated list means any of these servers)
// and STEWARD_TOKEN; errors become one clear line and a non-zero exit.

import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import tls from "node:tls";
import type { ErrorAnswer } from "../common/api/errors.ts";
import { CliError } from "../common/command-line/cli-error.ts";
import {
  API_VERSION,
  API_VERSION_HEADER,
  foreignApiVersion,
  RELEASE_HEADER,
  serverRefusal,
  stewardRelease,
} from "../common/protocol/versions.ts";
import { HttpClient, HttpError, RedirectRefusedError } from "../common/transport/http-client.ts";
import { CERTIFICATE_ERROR_CODES } from "../common/transport/trust.ts";
import { isLoopbackUrl } from "./loopback-url.ts";

export const DEFAULT_URL = "http://127.0.0.1:4780";
/** How long a command keeps trying a server that is restarting or failing over before it gives up. */
export const CLI_RETRY_BUDGET_MS = 5_000;

export interface RequestOptions {
  json?: unknown;
  body?: FormData | string;
  query?: Record<string, string | number | boolean | undefined>;
  /** Statuses that are answers, not errors (the caller looks at them). */
  accept?: number[];
  /** More headers (e.g. Idempotency-Key). */
  headers?: Record<string, string>;
  /** Time allowed for the answer, in ms; null for none (a backup streams for as long as it takes). */
  timeoutMs?: number | null;
  /** Safe to send again even when a try may have reached the server (the request carries a key). */
  idempotent?: boolean;
}

/** With several servers in STEWARD_URL, one that has not started answering in this time is skipped. */
export const CLI_SKIP_SILENT_SERVER_MS = 2000;

export class ApiClient {
  readonly urls: string[];
  private readonly token: string | null;
  /** Tries the next URL on a connection error, and keeps to the one that answered. */
  private readonly http: HttpClient;

  constructor(
    urls = process.env.STEWARD_URL ?? DEFAULT_URL,
    token: string | null | undefined = process.env.STEWARD_TOKEN,
  ) {
    this.urls = urls
      .split(",")
      .map((url) => url.trim().replace(/\/+$/, ""))
      .filter(Boolean);
    this.token = token ?? localToken(this.urls);
    this.http = new HttpClient({
      baseUrl: this.urls,
      retry: { budgetMs: CLI_RETRY_BUDGET_MS },
      // With several servers, one that does not answer (paused, cut off) is skipped instead of waited for.
      answerTimeoutMs: this.urls.length > 1 ? CLI_SKIP_SILENT_SERVER_MS : undefined,
      // A standby's redirect is followed to its leader only when the leader is in the list too.
      serversName: "STEWARD_URL",
    });
  }

  async request(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined && value !== false) query.set(key, String(value));
    }
    const suffix = query.size ? `?${query}` : "";
    // A job's owner is the user of the token (README "Users, tokens and roles"): no claim of a name goes with it.
    const headers: Record<string, string> = {
      [API_VERSION_HEADER]: String(API_VERSION),
      [RELEASE_HEADER]: stewardRelease(),
      ...options.headers,
    };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    let body: FormData | string | undefined = options.body;
    if (options.json !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(options.json);
    }
    let response: Response;
    try {
      response = await this.http.request({
        method,
        path: path + suffix,
        headers,
        body,
        idempotent: options.idempotent,
        // A followed log answers only once the job writes something: no time limit on that.
        timeoutMs:
          options.timeoutMs !== undefined ? options.timeoutMs : options.query?.follow ? null : undefined,
      });
    } catch (error) {
      if (error instanceof RedirectRefusedError) throw new CliError(error.message);
      const reason = error instanceof HttpError ? error.detail : error instanceof Error ? error.message : "";
      if (error instanceof HttpError && error.uncertain) {
        throw new CliError(
          `the connection to the Steward server at ${new URL(error.url).origin} broke before it answered ${method} ${path} (${reason}); it may have been done: look before trying again`,
        );
      }
      const where = error instanceof HttpError ? new URL(error.url).origin : this.urls.join(", ");
      if ([...CERTIFICATE_ERROR_CODES].some((code) => reason.startsWith(`${code}:`))) {
        throw new CliError(
          `the Steward server at ${where} presented a certificate this client does not trust (${reason}); give its authority with --ca FILE or STEWARD_CA`,
        );
      }
      if (error instanceof HttpError && error.url.startsWith("http:") && (await speaksTls(error.url))) {
        throw new CliError(
          `the Steward server at ${where} speaks HTTPS, not plain HTTP: use ${where.replace(/^http:/, "https:")} in STEWARD_URL`,
        );
      }
      throw new CliError(
        `cannot reach the Steward server at ${this.urls.join(", ")} (${reason}); is it running? Set STEWARD_URL to its address`,
      );
    }
    // A server of another API version: its answer may mean something else; its own refusal of
    // this client (400 api_version) already names both versions and is shown as it is.
    const theirs = foreignApiVersion(response.headers.get(API_VERSION_HEADER));
    if (theirs !== null && response.status !== 400) {
      await response.body?.cancel().catch(() => {});
      const server = { version: theirs, release: response.headers.get(RELEASE_HEADER) ?? undefined };
      throw new CliError(
        serverRefusal(new URL(response.url || this.urls[0]).origin, server, {
          version: API_VERSION,
          release: stewardRelease(),
        }),
        3,
      );
    }
    if (response.ok || options.accept?.includes(response.status)) return response;
    throw await errorFrom(response);
  }

  async json<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const response = await this.request(method, path, options);
    return (await response.json()) as T;
  }
}

async function errorFrom(response: Response): Promise<CliError> {
  let message = `HTTP ${response.status}`;
  try {
    // Any answer may come here (a proxy's error page too), so nothing in it is taken for granted.
    const body = (await response.json()) as Partial<ErrorAnswer> | null;
    if (body?.error?.message) message = body.error.message;
  } catch {}
  if (response.status === 401)
    return new CliError(`the server refused the token: ${message} (set STEWARD_TOKEN)`, 3, 401);
  return new CliError(message, 3, response.status);
}

/** Whether something at the URL's host and port completes a TLS handshake (an HTTPS server asked in plain HTTP). */
function speaksTls(url: string): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = tls.connect({ host: hostname, port: Number(port || 80), rejectUnauthorized: false });
    const done = (answer: boolean) => {
      socket.destroy();
      resolve(answer);
    };
    socket.setTimeout(1000, () => done(false));
    socket.once("secureConnect", () => done(true));
    socket.once("error", () => done(false));
  });
}

/**
 * `steward up` writes its admin token under its data folder; a CLI run beside it finds it there.
 * It goes to a server on this machine's loopback only: never to a remote STEWARD_URL (or one of a
 * list), which would learn this machine's admin token.
 */
function localToken(urls: readonly string[]): string | null {
  if (urls.length === 0 || !urls.every(isLoopbackUrl)) return null;
  const path = join(process.env.STEWARD_DATA ?? ".steward", "admin-token");
  return existsSync(path) ? readFileSync(path, "utf8").trim() : null;
}

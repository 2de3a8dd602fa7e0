// The one way Steward's processes call a server over HTTP: the CLI (several server URLs), the
// agent's staging (inputs in, outputs out) and its checkpoint uploads all go through here.
//
// A try that fails for the network, or is answered 503, is tried again after a capped exponential
// back-off with jitter, within a time budget; a Retry-After on the 503 is honoured. Trying again is
// safe only when the server cannot have acted on the first try twice, so:
// - a connection that was never established (refused, unreachable, no such host) sent nothing:
//   any request is tried again;
// - a connection lost before the answer, a timeout, or a 503 may follow a request the server has
//   acted on: only idempotent requests are tried again (GET, HEAD, PUT, DELETE, OPTIONS, and those
//   the caller marks idempotent, e.g. a checkpoint object named by its hash);
// - a body that is a one-shot stream is never sent twice; a caller that wants its stream retried
//   passes a factory that makes it again.
// With several base URLs, a failed try moves on to the next URL at once, and the back-off comes
// after a round of all of them.
//
// A redirect (a standby naming its leader) is followed with the token and the body, but only to
// one of the servers the client was given (same scheme, host and port), and never from HTTPS to
// plain HTTP: anywhere else it would hand the bearer token to whoever the Location names. Such a
// redirect stops the request with a RedirectRefusedError naming the target.

import { setTimeout as sleep } from "node:timers/promises";
import { monotonicMs } from "../time/clocks.ts";
import { CERTIFICATE_ERROR_CODES } from "./trust.ts";
import { uploadAllowanceMs } from "./upload-allowance.ts";

/** The back-off after the first failed round; it doubles per round up to the cap. */
export const RETRY_FIRST_DELAY_MS = 100;
export const RETRY_MAX_DELAY_MS = 2_000;
/** No new try starts later than this after the first one (a try itself may run past it). */
export const RETRY_BUDGET_MS = 30_000;
/** How long one try may wait for the answer's headers (the body is the caller's to read). */
export const REQUEST_TIMEOUT_MS = 30_000;
/** Answers that say "not now": tried again, for idempotent requests. */
export const RETRY_STATUSES: readonly number[] = [503];
/** A standby answers with these, naming the leader in Location. */
export const REDIRECT_STATUSES: readonly number[] = [307, 308];
/** Redirects followed for one request. */
export const MAX_REDIRECTS = 3;

export interface RetryPolicy {
  firstDelayMs: number;
  maxDelayMs: number;
  budgetMs: number;
  /** Tries in all, counting the first; no limit but the budget when absent. */
  maxTries?: number;
}

export const DEFAULT_RETRY: RetryPolicy = {
  firstDelayMs: RETRY_FIRST_DELAY_MS,
  maxDelayMs: RETRY_MAX_DELAY_MS,
  budgetMs: RETRY_BUDGET_MS,
};

/** Bodies that can be sent again as they are. */
export type ReplayableBody = string | Uint8Array | ArrayBuffer | Blob | FormData | URLSearchParams;
/** Bodies that are read once: a web ReadableStream, a Node.js Readable, any async iterable. */
export type StreamBody = AsyncIterable<Uint8Array>;
/** Makes the body anew for each try: how a stream body is made retryable. */
export type BodyFactory = () => ReplayableBody | StreamBody | Promise<ReplayableBody | StreamBody>;

export interface HttpRequest {
  method?: string;
  /** Path (with its query, if any) after the base URL. */
  path: string;
  headers?: Record<string, string>;
  /** Sent as JSON, with its content type; instead of `body`. */
  json?: unknown;
  body?: ReplayableBody | StreamBody | BodyFactory;
  /** Whether the server may receive it twice; by default, true for GET, HEAD, PUT, DELETE, OPTIONS. */
  idempotent?: boolean;
  /**
   * For each try, until the answer's headers; null for none. Default: REQUEST_TIMEOUT_MS plus the
   * body's time to go at UPLOAD_MIN_BYTES_PER_SECOND, more after a try that timed out sending it
   * (upload-allowance.ts).
   */
  timeoutMs?: number | null;
  /** Aborts the request, its back-off waits, and the answer's body. */
  signal?: AbortSignal;
  /** Overrides the client's policy for this request; false for a single try. */
  retry?: Partial<RetryPolicy> | false;
}

export interface HttpClientOptions {
  /**
   * Where the server is. Several URLs mean any of these servers; a function is asked again at
   * every try (the agent follows the server it is connected to).
   */
  baseUrl: string | readonly string[] | (() => string);
  /** Sent as `Authorization: Bearer ...` (an API token, or an agent's join token). */
  token?: string | null | (() => string | null);
  /** Sent with every request. */
  headers?: Record<string, string>;
  retry?: Partial<RetryPolicy>;
  /** Time a server has to start answering, before the body's allowance (default REQUEST_TIMEOUT_MS). */
  answerTimeoutMs?: number;
  /**
   * The servers a redirect may lead to (compared by origin: scheme, host and port). Default: the
   * base URLs; with a base URL function, the server it names at the time.
   */
  redirectOrigins?: readonly string[];
  /** Where the servers were given, for a refused redirect's message (`STEWARD_URL`, `--server`). */
  serversName?: string;
}

/**
 * Why a request got no usable answer: `refused` (no connection: nothing was sent), `lost` (the
 * connection broke before the answer), `timeout` (no answer in time), `failed` (anything else, such
 * as a bad URL or a body that could not be read: not tried again).
 */
export type HttpFailure = "refused" | "lost" | "timeout" | "failed";

export class HttpError extends Error {
  readonly method: string;
  /** The URL of the last try, without its query. */
  readonly url: string;
  readonly failure: HttpFailure;
  /** The cause alone, e.g. "connect ECONNREFUSED 127.0.0.1:4780". */
  readonly detail: string;
  readonly tries: number;
  /** The server may have acted on the request, which was not sent again for that reason. */
  readonly uncertain: boolean;

  constructor(
    method: string,
    url: string,
    failure: HttpFailure,
    detail: string,
    tries: number,
    note: string,
    uncertain = false,
  ) {
    super(`${method} ${url}: ${detail}${note ? ` (${note})` : ""}`);
    this.name = "HttpError";
    this.method = method;
    this.url = url;
    this.failure = failure;
    this.detail = detail;
    this.tries = tries;
    this.uncertain = uncertain;
  }
}

const IDEMPOTENT_METHODS = new Set(["GET", "HEAD", "PUT", "DELETE", "OPTIONS"]);

/** Connection errors raised before anything was sent. */
const NOT_SENT_CODES = new Set([
  "ECONNREFUSED",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EADDRNOTAVAIL",
  "ENOTFOUND",
  "EAI_AGAIN",
  "UND_ERR_CONNECT_TIMEOUT",
]);

/** Connection errors after which the server may have the request. */
const LOST_CODES = new Set([
  "ECONNRESET",
  "EPIPE",
  "ECONNABORTED",
  "ETIMEDOUT",
  "UND_ERR_SOCKET",
  "UND_ERR_CLOSED",
  "UND_ERR_HEADERS_TIMEOUT",
]);

/** The back-off after `rounds` failed rounds (1, 2, ...): doubling up to the cap, jitter over the upper half. */
export function retryDelayMs(rounds: number, random: number, policy: RetryPolicy = DEFAULT_RETRY): number {
  const ceiling = Math.min(policy.maxDelayMs, policy.firstDelayMs * 2 ** Math.max(0, rounds - 1));
  return Math.round(ceiling / 2 + (ceiling / 2) * random);
}

/** Retry-After in milliseconds (delay-seconds or an HTTP date), or null when absent or unreadable. */
export function retryAfterMs(header: string | null, now = Date.now()): number | null {
  if (header === null || header.trim() === "") return null;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** A redirect that would take the request (and its token) away from the servers the client was given. */
export class RedirectRefusedError extends Error {
  /** Where the redirect led, without its query. */
  readonly target: string;

  constructor(target: string, why: string) {
    super(`refusing to follow a redirect to ${target}: ${why}`);
    this.name = "RedirectRefusedError";
    this.target = target;
  }
}

/**
 * Why the redirect from `from` to `to` must not be followed, or null when it may: it must stay on
 * HTTPS when it started there, and lead to the same origin or one of `allowed`.
 */
function redirectRefusal(
  from: URL,
  to: URL,
  allowed: ReadonlySet<string>,
  serversName: string,
): string | null {
  if (from.protocol === "https:" && to.protocol !== "https:") return "it leaves HTTPS for plain HTTP";
  // The same server again: the token goes nowhere new.
  if (to.origin === from.origin || allowed.has(to.origin)) return null;
  return `not one of the servers in ${serversName}`;
}

/** A URL as a message shows it: without its query or fragment, which may carry more than a path. */
function withoutQuery(url: URL): string {
  return url.href.replace(/[?#].*$/, "");
}

/** A URL's origin (scheme, host, port as URL normalises them), or null for one without (not http(s)). */
function originOf(url: string): string | null {
  const origin = URL.parse(url)?.origin;
  return origin === undefined || origin === "null" ? null : origin;
}

type TryResult = { response: Response } | { failure: HttpFailure; detail: string };

export class HttpClient {
  private readonly bases: readonly string[] | (() => string);
  private readonly token: string | null | (() => string | null);
  private readonly headers: Record<string, string>;
  private readonly retry: RetryPolicy;
  private readonly answerTimeoutMs: number;
  /** Origins a redirect may lead to; null: the base URL function's answer at the time. */
  private readonly redirectOrigins: ReadonlySet<string> | null;
  private readonly serversName: string;
  /** With several base URLs: the one that answered last, tried first. */
  private preferred = 0;

  constructor(options: HttpClientOptions) {
    const { baseUrl } = options;
    this.bases = typeof baseUrl === "function" ? baseUrl : typeof baseUrl === "string" ? [baseUrl] : baseUrl;
    this.token = options.token ?? null;
    this.headers = options.headers ?? {};
    this.retry = { ...DEFAULT_RETRY, ...options.retry };
    this.answerTimeoutMs = options.answerTimeoutMs ?? REQUEST_TIMEOUT_MS;
    const origins = options.redirectOrigins ?? (typeof this.bases === "function" ? null : this.bases);
    this.redirectOrigins = origins === null ? null : new Set(origins.flatMap((url) => originOf(url) ?? []));
    this.serversName = options.serversName ?? "the client's server list";
  }

  /**
   * Sends the request, trying again as the rules above allow. Resolves with the answer, whatever its
   * status (a 503 that outlasted the budget included); rejects with an HttpError when no answer
   * came, or with the signal's reason when the caller aborted.
   */
  async request(request: HttpRequest): Promise<Response> {
    const method = (request.method ?? "GET").toUpperCase();
    const idempotent = request.idempotent ?? IDEMPOTENT_METHODS.has(method);
    const policy: RetryPolicy =
      request.retry === false ? { ...this.retry, maxTries: 1 } : { ...this.retry, ...request.retry };
    const headers: Record<string, string> = { ...this.headers, ...request.headers };
    const token = typeof this.token === "function" ? this.token() : this.token;
    if (token) headers.authorization = `Bearer ${token}`;
    if (request.json !== undefined) headers["content-type"] = "application/json";
    const { signal } = request;
    const started = monotonicMs();
    const count = typeof this.bases === "function" ? 1 : this.bases.length;
    let index = this.preferred;
    let tries = 0;
    let rounds = 0;
    let inRound = 0;
    let retryAfter = 0;
    /** A standby's redirect to the leader, followed with the same token and body. */
    let redirectTo: string | null = null;
    let redirects = 0;
    /** Tries that timed out while sending a body: each gives the next more time to send it. */
    let slowTries = 0;
    if (count === 0) throw new HttpError(method, request.path, "failed", "no server URL", 0, "");
    for (;;) {
      signal?.throwIfAborted();
      const base = this.base(index);
      const url: string = redirectTo ?? base + request.path;
      redirectTo = null;
      const shown = base + request.path.replace(/\?.*$/, "");
      tries++;
      const body = await makeBody(request);
      const result = await tryOnce(
        url,
        method,
        headers,
        body,
        timeoutFor(request, body, this.answerTimeoutMs, slowTries),
        signal,
      );
      if ("response" in result) {
        const { response } = result;
        const location = response.headers.get("location");
        if (
          REDIRECT_STATUSES.includes(response.status) &&
          location &&
          redirects < MAX_REDIRECTS &&
          replayable(request)
        ) {
          // fetch would drop the token on a redirect to another origin: follow it here, token and
          // all, but only to a server the client was given.
          const from = new URL(url);
          const target = URL.parse(location, url);
          await response.body?.cancel().catch(() => {});
          if (target === null) throw new RedirectRefusedError(location, "not a URL");
          const allowed = this.redirectOrigins ?? new Set([new URL(base).origin]);
          const refusal = redirectRefusal(from, target, allowed, this.serversName);
          if (refusal !== null) throw new RedirectRefusedError(withoutQuery(target), refusal);
          redirects++;
          redirectTo = target.toString();
          continue;
        }
        // A redirect is a standby saying "not here": nothing was done, so any request may go round
        // again, after a back-off, once it has been followed MAX_REDIRECTS times this round.
        const redirected = REDIRECT_STATUSES.includes(response.status);
        if (redirected) redirects = 0;
        const notNow = redirected || (RETRY_STATUSES.includes(response.status) && idempotent);
        if (!notNow || !replayable(request)) {
          if (typeof this.bases !== "function") this.preferred = index;
          return response;
        }
        retryAfter = Math.max(retryAfter, retryAfterMs(response.headers.get("retry-after")) ?? 0);
      } else {
        if (result.failure === "timeout" && body !== undefined && sizeOf(body) > 0) slowTries++;
        discard(body);
        const refusal = whyNotAgain(result.failure, idempotent, replayable(request));
        if (refusal !== null) {
          const uncertain = result.failure === "lost" || result.failure === "timeout";
          throw new HttpError(method, shown, result.failure, result.detail, tries, refusal, uncertain);
        }
      }
      inRound++;
      index = (index + 1) % count;
      let delay = 0;
      if (inRound >= count) {
        inRound = 0;
        rounds++;
        delay = Math.max(retryDelayMs(rounds, Math.random(), policy), retryAfter);
        retryAfter = 0;
      }
      const outOfTries = policy.maxTries !== undefined && tries >= policy.maxTries;
      if (outOfTries || monotonicMs() + delay - started > policy.budgetMs) {
        if ("response" in result) return result.response;
        const seconds = ((monotonicMs() - started) / 1000).toFixed(1);
        throw new HttpError(
          method,
          shown,
          result.failure,
          result.detail,
          tries,
          `gave up after ${tries} ${tries === 1 ? "try" : "tries"} in ${seconds} s`,
        );
      }
      if ("response" in result) await result.response.body?.cancel().catch(() => {});
      if (delay > 0) await pause(delay, signal);
    }
  }

  private base(index: number): string {
    const base = typeof this.bases === "function" ? this.bases() : this.bases[index];
    return base.replace(/\/+$/, "");
  }
}

/** Waits, or rejects with the caller's own reason once it aborts. */
async function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  try {
    await sleep(ms, undefined, { signal });
  } catch (error) {
    throw signal?.aborted ? signal.reason : error;
  }
}

async function tryOnce(
  url: string,
  method: string,
  headers: Record<string, string>,
  body: ReplayableBody | StreamBody | undefined,
  timeoutMs: number | null,
  signal: AbortSignal | undefined,
): Promise<TryResult> {
  const timer = new AbortController();
  const timeout =
    timeoutMs === null ? null : setTimeout(() => timer.abort(new TryTimeout(timeoutMs)), timeoutMs);
  const init: RequestInit & { duplex?: "half" } = {
    method,
    headers,
    // Redirects are followed by HttpClient.request, which keeps the token on another origin.
    redirect: "manual",
    body: body as RequestInit["body"],
    signal: signal ? AbortSignal.any([signal, timer.signal]) : timer.signal,
  };
  // fetch needs to be told that a stream body is sent while the answer may already come.
  if (body !== undefined && isStream(body)) init.duplex = "half";
  try {
    return { response: await fetch(url, init) };
  } catch (error) {
    if (signal?.aborted) throw signal.reason;
    if (error instanceof TryTimeout) return { failure: "timeout", detail: error.message };
    return classify(error);
  } finally {
    if (timeout) clearTimeout(timeout);
  }
}

class TryTimeout extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
  }
}

function classify(error: unknown): TryResult {
  const cause = error instanceof Error && error.cause instanceof Error ? error.cause : error;
  const code = errorCode(cause);
  const detail = describe(cause) || describe(error);
  if (code !== null && NOT_SENT_CODES.has(code)) return { failure: "refused", detail };
  if (code !== null && LOST_CODES.has(code)) return { failure: "lost", detail };
  return { failure: "failed", detail };
}

function errorCode(error: unknown): string | null {
  if (!(error instanceof Error)) return null;
  const code = (error as NodeJS.ErrnoException).code;
  if (typeof code === "string") return code;
  // Connecting to each address of a name (IPv6 and IPv4) fails as one AggregateError.
  if (error instanceof AggregateError) return errorCode(error.errors[0]);
  return null;
}

function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  // A certificate problem says which: its code is what a person looks up.
  const code = (error as NodeJS.ErrnoException).code;
  if (typeof code === "string" && CERTIFICATE_ERROR_CODES.has(code)) return `${code}: ${error.message}`;
  if (error.message) return error.message;
  if (error instanceof AggregateError) return error.errors.map(describe).join("; ");
  return (error as NodeJS.ErrnoException).code ?? error.name;
}

async function makeBody(request: HttpRequest): Promise<ReplayableBody | StreamBody | undefined> {
  if (request.json !== undefined) return JSON.stringify(request.json);
  return typeof request.body === "function" ? await request.body() : request.body;
}

/** Why a try that failed this way is not made again, or null when it may be. */
function whyNotAgain(failure: HttpFailure, idempotent: boolean, replayable: boolean): string | null {
  if (failure === "failed") return "";
  if (failure !== "refused" && !idempotent) return "not tried again: the server may have acted on it";
  if (!replayable) return "not tried again: its body was a stream without a factory";
  return null;
}

/** Closes a stream body that a failed try left unread (a file it had open, say). */
function discard(body: ReplayableBody | StreamBody | undefined): void {
  if (body !== undefined && isStream(body) && "destroy" in body && typeof body.destroy === "function") {
    body.destroy();
  }
}

function replayable(request: HttpRequest): boolean {
  return request.body === undefined || typeof request.body === "function" || !isStream(request.body);
}

function isStream(body: ReplayableBody | StreamBody): body is StreamBody {
  return typeof body === "object" && Symbol.asyncIterator in body && !(body instanceof Blob);
}

function timeoutFor(
  request: HttpRequest,
  body: ReplayableBody | StreamBody | undefined,
  answerMs: number,
  slowTries: number,
): number | null {
  if (request.timeoutMs !== undefined) return request.timeoutMs;
  return answerMs + uploadAllowanceMs(body === undefined ? 0 : sizeOf(body), slowTries);
}

/** Bytes in a body, as far as they can be known without reading it. */
function sizeOf(body: ReplayableBody | StreamBody): number {
  if (typeof body === "string") return Buffer.byteLength(body);
  if (body instanceof Blob) return body.size;
  if (body instanceof ArrayBuffer || body instanceof Uint8Array) return body.byteLength;
  if (body instanceof FormData) {
    let bytes = 0;
    for (const [, value] of body) bytes += typeof value === "string" ? Buffer.byteLength(value) : value.size;
    return bytes;
  }
  return 0;
}

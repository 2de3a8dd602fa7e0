// The CLI's way to the API: STEWARD_URL (a comma-separated list means any of these servers)
// and STEWARD_TOKEN; errors become one clear line and a non-zero exit.

import { existsSync, readFileSync } from "node:fs";
import os from "node:os";
import { join } from "node:path";

export const DEFAULT_URL = "http://127.0.0.1:4780";

export class CliError extends Error {
  readonly exitCode: number;
  constructor(message: string, exitCode = 3) {
    super(message);
    this.exitCode = exitCode;
  }
}

export interface RequestOptions {
  json?: unknown;
  body?: FormData | string;
  query?: Record<string, string | number | boolean | undefined>;
  /** Statuses that are answers, not errors (the caller looks at them). */
  accept?: number[];
}

export class ApiClient {
  readonly urls: string[];
  private readonly token: string | null;
  private preferred = 0;

  constructor(
    urls = process.env.STEWARD_URL ?? DEFAULT_URL,
    token = process.env.STEWARD_TOKEN ?? localToken(),
  ) {
    this.urls = urls
      .split(",")
      .map((url) => url.trim().replace(/\/+$/, ""))
      .filter(Boolean);
    this.token = token;
  }

  async request(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    const query = new URLSearchParams();
    for (const [key, value] of Object.entries(options.query ?? {})) {
      if (value !== undefined && value !== false) query.set(key, String(value));
    }
    const suffix = query.size ? `?${query}` : "";
    const headers: Record<string, string> = { "x-steward-user": os.userInfo().username };
    if (this.token) headers.authorization = `Bearer ${this.token}`;
    let body: FormData | string | undefined = options.body;
    if (options.json !== undefined) {
      headers["content-type"] = "application/json";
      body = JSON.stringify(options.json);
    }
    let lastError: unknown = null;
    for (let i = 0; i < this.urls.length; i++) {
      const index = (this.preferred + i) % this.urls.length;
      try {
        const response = await fetch(this.urls[index] + path + suffix, { method, headers, body });
        this.preferred = index;
        if (response.ok || options.accept?.includes(response.status)) return response;
        throw await errorFrom(response);
      } catch (error) {
        if (error instanceof CliError) throw error;
        lastError = error;
      }
    }
    const reason =
      lastError instanceof Error ? ((lastError.cause as Error)?.message ?? lastError.message) : "";
    throw new CliError(
      `cannot reach the Steward server at ${this.urls.join(", ")} (${reason}); is it running? Set STEWARD_URL to its address`,
    );
  }

  async json<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const response = await this.request(method, path, options);
    return (await response.json()) as T;
  }
}

async function errorFrom(response: Response): Promise<CliError> {
  let message = `HTTP ${response.status}`;
  try {
    const body = (await response.json()) as { error?: { message?: string } };
    if (body.error?.message) message = body.error.message;
  } catch {}
  if (response.status === 401)
    return new CliError(`the server refused the token: ${message} (set STEWARD_TOKEN)`);
  return new CliError(message);
}

/** `steward up` writes its admin token under its data folder; a CLI run beside it finds it there. */
function localToken(): string | null {
  const path = join(process.env.STEWARD_DATA ?? ".steward", "admin-token");
  return existsSync(path) ? readFileSync(path, "utf8").trim() : null;
}

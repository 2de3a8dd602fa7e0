// A small client of the Steward API over undici's global fetch (keep-alive connections are pooled
// by the global dispatcher, so sequential requests reuse one connection).

export interface ApiAnswer<T> {
  status: number;
  body: T;
}

export interface JobSummary {
  id: string;
  state: string;
  counts: { pending: number; running: number; succeeded: number; failed: number; cancelled: number };
}

export interface HostSummary {
  name: string;
  state: string;
  connected: boolean;
  slots: number;
  slotsFree: number;
}

export class ApiError extends Error {
  readonly status: number;
  constructor(method: string, path: string, status: number, body: string) {
    super(`${method} ${path}: HTTP ${status} ${body.slice(0, 500)}`);
    this.status = status;
  }
}

export class Api {
  readonly url: string;
  readonly #authorization: string;

  constructor(url: string, token: string) {
    this.url = url.replace(/\/+$/, "");
    this.#authorization = `Bearer ${token}`;
  }

  async request<T>(method: string, path: string, body?: unknown): Promise<ApiAnswer<T>> {
    const headers: Record<string, string> = { authorization: this.#authorization };
    if (body !== undefined) headers["content-type"] = "application/json";
    const response = await fetch(this.url + path, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    // Always read the body: an unread body keeps the connection from going back to the pool.
    const text = await response.text();
    if (!response.ok) throw new ApiError(method, path, response.status, text);
    return { status: response.status, body: (text ? JSON.parse(text) : null) as T };
  }

  /** POST /api/v1/jobs; answers the job's id once the job is durable. */
  async submit(job: unknown): Promise<string> {
    const answer = await this.request<{ id: string }>("POST", "/api/v1/jobs", job);
    if (answer.status !== 201) throw new Error(`submit answered ${answer.status}, not 201`);
    return answer.body.id;
  }

  async job(id: string): Promise<JobSummary> {
    return (await this.request<JobSummary>("GET", `/api/v1/jobs/${id}?tasks=0&events=0`)).body;
  }

  async hosts(): Promise<HostSummary[]> {
    return (await this.request<HostSummary[]>("GET", "/api/v1/hosts")).body;
  }
}

// A small client of the Steward API. JSON requests go over node:http with a keep-alive agent
// (sequential requests reuse one connection, concurrent ones one each): undici's fetch cost the
// benchmark's own process about 0.8 ms of CPU a request here against 0.2 ms, on the same two
// cores as the broker it measures. Multipart submits, metrics and logs go over fetch.

import { Agent, request as httpRequest } from "node:http";

export interface ApiAnswer<T> {
  status: number;
  body: T;
}

export interface JobSummary {
  id: string;
  state: string;
  counts: { pending: number; running: number; succeeded: number; failed: number; cancelled: number };
}

export interface AttemptView {
  number: number;
  host: string;
  state: "starting" | "running" | "stopping" | "ended";
  outcome: string | null;
  reason: string | null;
  exitCode: number | null;
  restarted: boolean;
  startedAt: string | null;
  endedAt: string | null;
}

export interface TaskView {
  index: number;
  state: string;
  attempts: AttemptView[];
  checkpoint: { generation: number; bytes: number; at: string } | null;
}

export interface JobDetail extends JobSummary {
  tasks: TaskView[];
}

/** A file part of a multipart submit: its name is the input's path. */
export interface InputFile {
  path: string;
  content: Blob;
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
  readonly #origin: URL;
  /** Kept-alive connections; an idle one does not hold the process open (the agent unrefs it). */
  readonly #agent = new Agent({ keepAlive: true });

  constructor(url: string, token: string) {
    this.url = url.replace(/\/+$/, "");
    this.#authorization = `Bearer ${token}`;
    this.#origin = new URL(this.url);
    if (this.#origin.protocol !== "http:") throw new Error(`the benchmark client speaks http only: ${url}`);
  }

  async request<T>(method: string, path: string, body?: unknown): Promise<ApiAnswer<T>> {
    const payload = body === undefined ? undefined : JSON.stringify(body);
    const headers: Record<string, string | number> = { authorization: this.#authorization };
    if (payload !== undefined) {
      headers["content-type"] = "application/json";
      headers["content-length"] = Buffer.byteLength(payload);
    }
    const { status, text } = await new Promise<{ status: number; text: string }>((resolve, reject) => {
      const outgoing = httpRequest(
        {
          agent: this.#agent,
          host: this.#origin.hostname,
          port: this.#origin.port,
          path: `${this.#origin.pathname.replace(/\/$/, "")}${path}`,
          method,
          headers,
        },
        (response) => {
          const chunks: Buffer[] = [];
          response.on("data", (chunk: Buffer) => chunks.push(chunk));
          response.on("end", () =>
            resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString("utf8") }),
          );
          response.on("error", reject);
        },
      );
      outgoing.on("error", reject);
      outgoing.end(payload);
    });
    if (status < 200 || status >= 300) throw new ApiError(method, path, status, text);
    return { status, body: (text ? JSON.parse(text) : null) as T };
  }

  /** POST /api/v1/jobs; answers the job's id once the job is durable. */
  async submit(job: unknown): Promise<string> {
    const answer = await this.request<{ id: string }>("POST", "/api/v1/jobs", job);
    if (answer.status !== 201) throw new Error(`submit answered ${answer.status}, not 201`);
    return answer.body.id;
  }

  /** POST /api/v1/jobs as multipart/form-data: the field `job` first, then one part per input. */
  async submitWithFiles(job: unknown, files: InputFile[]): Promise<string> {
    const form = new FormData();
    form.set("job", JSON.stringify(job));
    for (const file of files) form.append(file.path, file.content, file.path);
    const path = "/api/v1/jobs";
    const response = await fetch(this.url + path, {
      method: "POST",
      headers: { authorization: this.#authorization },
      body: form,
    });
    const text = await response.text();
    if (response.status !== 201) throw new ApiError("POST", path, response.status, text);
    return (JSON.parse(text) as { id: string }).id;
  }

  /** The job with its tasks and their attempts (no events). */
  async jobDetail(id: string): Promise<JobDetail> {
    return (await this.request<JobDetail>("GET", `/api/v1/jobs/${id}?events=0`)).body;
  }

  /** POST /api/v1/jobs/{id}/{cancel|hold|release|migrate}. */
  async control(id: string, action: "cancel" | "hold" | "release" | "migrate", body: unknown = {}) {
    await this.request("POST", `/api/v1/jobs/${id}/${action}`, body);
  }

  /** The server's Prometheus metrics, as text. */
  async metrics(): Promise<string> {
    const response = await fetch(`${this.url}/metrics`, { headers: { authorization: this.#authorization } });
    const text = await response.text();
    if (!response.ok) throw new ApiError("GET", "/metrics", response.status, text);
    return text;
  }

  /** stdout of an attempt (the latest one without `attempt`), as far as the server has it. */
  async logs(id: string, options: { task?: number; attempt?: number; stream?: "stderr" } = {}) {
    const query = new URLSearchParams({ task: String(options.task ?? 0) });
    if (options.attempt !== undefined) query.set("attempt", String(options.attempt));
    if (options.stream) query.set("stream", options.stream);
    const path = `/api/v1/jobs/${id}/logs?${query}`;
    const response = await fetch(this.url + path, { headers: { authorization: this.#authorization } });
    const text = await response.text();
    if (!response.ok) throw new ApiError("GET", path, response.status, text);
    return text;
  }

  async job(id: string): Promise<JobSummary> {
    return (await this.request<JobSummary>("GET", `/api/v1/jobs/${id}?tasks=0&events=0`)).body;
  }

  async hosts(): Promise<HostSummary[]> {
    return (await this.request<HostSummary[]>("GET", "/api/v1/hosts")).body;
  }
}

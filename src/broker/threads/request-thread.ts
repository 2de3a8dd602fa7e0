// A worker thread that does synchronous work for its owner's thread, one request at a time in the
// order they came, and the owner's side that sends them: each request resolves with the thread's
// answer or rejects with what it threw. Used where a synchronous call would hold up an event loop
// that has other work: the SQLite store's writes (their fsync), the agent's attempt folders.

import { parentPort, Worker } from "node:worker_threads";

/** What a request threw, as it crosses threads (an Error's class does not survive the copy). */
export interface ThreadFailure {
  /** The class's name ("StaleTermError", "RangeError", "Error"). */
  name: string;
  message: string;
  /** Its own fields with plain values (a system error's `code`, a StaleTermError's terms). */
  fields: Record<string, string | number | boolean | null>;
}

type Answer = { id: number; value: unknown } | { id: number; failure: ThreadFailure };

function failureOf(error: unknown): ThreadFailure {
  if (!(error instanceof Error)) return { name: "Error", message: String(error), fields: {} };
  const fields: ThreadFailure["fields"] = {};
  for (const [key, value] of Object.entries(error))
    if (value === null || ["string", "number", "boolean"].includes(typeof value))
      fields[key] = value as string | number | boolean | null;
  return { name: error.constructor.name, message: error.message, fields };
}

/** An Error with the failure's message, name and fields; `revive` may give a class back first. */
function errorOf(failure: ThreadFailure, revive?: (failure: ThreadFailure) => Error | null): Error {
  const revived = revive?.(failure);
  if (revived) return revived;
  const error = failure.name === "RangeError" ? new RangeError(failure.message) : new Error(failure.message);
  if (failure.name !== "RangeError" && failure.name !== "Error") error.name = failure.name;
  return Object.assign(error, failure.fields);
}

/**
 * The thread's side: answers each request (with a number id) by `handle`, or by what it threw.
 * `handle` returning `closeAfter` ends the thread's service once that answer is sent.
 */
export function serveRequests<R>(handle: (request: R) => unknown, closeAfter: (request: R) => boolean): void {
  const port = parentPort;
  if (!port) throw new Error("serveRequests runs in a worker thread");
  port.on("message", ({ id, request }: { id: number; request: R }) => {
    let answer: Answer;
    try {
      answer = { id, value: handle(request) };
    } catch (error) {
      answer = { id, failure: failureOf(error) };
    }
    port.postMessage(answer);
    if (closeAfter(request)) port.close();
  });
}

/** The owner's side. The thread keeps the process alive only while a request waits for its answer. */
export class RequestThread<R> {
  readonly #worker: Worker;
  readonly #revive: ((failure: ThreadFailure) => Error | null) | undefined;
  readonly #waiting = new Map<
    number,
    { resolve: (value: unknown) => void; reject: (error: Error) => void }
  >();
  #next = 0;
  #gone: Error | null = null;

  /** `url`: the thread's module; `workerData` tells it what to serve. */
  constructor(
    url: URL,
    workerData: unknown,
    options: { name: string; revive?: (failure: ThreadFailure) => Error | null },
  ) {
    this.#revive = options.revive;
    this.#worker = new Worker(url, { workerData, name: options.name });
    this.#worker.unref();
    this.#worker.on("message", (answer: Answer) => {
      const waiting = this.#waiting.get(answer.id);
      if (!waiting) return;
      this.#waiting.delete(answer.id);
      if (this.#waiting.size === 0) this.#worker.unref();
      if ("failure" in answer) waiting.reject(errorOf(answer.failure, this.#revive));
      else waiting.resolve(answer.value);
    });
    const fail = (error: Error) => {
      this.#gone ??= error;
      for (const waiting of this.#waiting.values()) waiting.reject(error);
      this.#waiting.clear();
    };
    this.#worker.on("error", fail);
    this.#worker.on("exit", (code) =>
      fail(new Error(`the ${options.name} thread ended (exit code ${code})`)),
    );
  }

  /** Whether the thread has ended (it answers no more requests). */
  get ended(): boolean {
    return this.#gone !== null;
  }

  request<T>(request: R): Promise<T> {
    if (this.#gone) return Promise.reject(this.#gone);
    const id = this.#next++;
    return new Promise<T>((resolve, reject) => {
      if (this.#waiting.size === 0) this.#worker.ref();
      this.#waiting.set(id, { resolve: resolve as (value: unknown) => void, reject });
      this.#worker.postMessage({ id, request });
    });
  }

  /** Sends `closing` (answered after the requests sent before it), then ends the thread. */
  async close(closing: R): Promise<void> {
    if (!this.#gone) await this.request(closing).catch(() => {});
    await this.#worker.terminate();
  }
}

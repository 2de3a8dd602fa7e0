// The dashboard's way to the public API: the same bearer token as the CLI, kept in this tab's
// session storage. The event stream is read with fetch (EventSource cannot send a header).
// Every request goes to the page's own server and follows no redirect: a standby's 307 names its
// leader, another origin, and the token must not go wherever a Location says (the dashboard is
// opened on the leader instead; /healthz names it).

const TOKEN_KEY = "steward-token";

export function savedToken() {
  return sessionStorage.getItem(TOKEN_KEY);
}

export function saveToken(token) {
  if (token) sessionStorage.setItem(TOKEN_KEY, token);
  else sessionStorage.removeItem(TOKEN_KEY);
}

export class ApiError extends Error {
  constructor(status, answer) {
    super(answer?.error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = answer?.error?.code ?? null;
    this.field = answer?.error?.field ?? null;
    // A job file's error sent as text: the line and column of its field (from 1).
    this.line = answer?.error?.line ?? null;
    this.column = answer?.error?.column ?? null;
  }
}

/** A redirect the dashboard does not follow, as an ApiError that says what to do. */
const REDIRECTED = {
  error: {
    code: "redirected",
    message:
      "this server sends its API elsewhere (a standby sends it to its leader): open the dashboard on the leading server",
  },
};

/**
 * fetch on the page's own server, without following a redirect: a browser answers one as an
 * opaque redirect (status 0), which becomes an ApiError here.
 */
async function fetchHere(path, init) {
  const response = await fetch(path, { ...init, redirect: "manual" });
  if (response.type === "opaqueredirect" || (response.status >= 300 && response.status < 400))
    throw new ApiError(response.status, REDIRECTED);
  return response;
}

/** A request with the saved token (or `token`); JSON back, or an ApiError. */
export async function call(method, path, { json, text, type, token, signal } = {}) {
  const headers = { authorization: `Bearer ${token ?? savedToken() ?? ""}` };
  let body;
  if (json !== undefined) {
    headers["content-type"] = "application/json";
    body = JSON.stringify(json);
  } else if (text !== undefined) {
    headers["content-type"] = type ?? "text/plain";
    body = text;
  }
  const response = await fetchHere(path, { method, headers, body, signal });
  const answer = await response.text();
  const parsed = answer ? JSON.parse(answer) : null;
  if (!response.ok) throw new ApiError(response.status, parsed);
  return parsed;
}

/**
 * Job events as they come (GET /api/v1/events), read with fetch; comes back after a broken
 * connection with Last-Event-ID, so none is missed. Each has `type`: "job" (a stored event) or
 * "progress" (a job's task counts). Returns a function that stops it.
 */
export function followEvents(query, onEvent, onState = () => {}) {
  const controller = new AbortController();
  let last = null;
  const run = async () => {
    while (!controller.signal.aborted) {
      try {
        const headers = { authorization: `Bearer ${savedToken() ?? ""}` };
        if (last !== null) headers["last-event-id"] = String(last);
        const response = await fetchHere(`/api/v1/events${query ? `?${query}` : ""}`, {
          headers,
          signal: controller.signal,
        });
        if (!response.ok) throw new ApiError(response.status, await response.json().catch(() => null));
        onState("live");
        const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          let end = buffer.indexOf("\n\n");
          while (end >= 0) {
            const block = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            end = buffer.indexOf("\n\n");
            const fields = {};
            for (const line of block.split("\n")) {
              if (line.startsWith(":")) continue;
              const colon = line.indexOf(": ");
              fields[line.slice(0, colon)] = line.slice(colon + 2);
            }
            // `job`: a stored event (with an id to come back from); `progress`: a job's task counts.
            if (fields.event === "job") last = Number(fields.id);
            else if (fields.event !== "progress") continue;
            onEvent({ type: fields.event, ...JSON.parse(fields.data) });
          }
        }
      } catch (error) {
        if (controller.signal.aborted) return;
        onState(error instanceof ApiError ? error.message : "reconnecting");
      }
      if (!controller.signal.aborted) await new Promise((done) => setTimeout(done, 1000));
    }
  };
  run();
  return () => controller.abort();
}

const ENDED = new Set(["succeeded", "failed", "cancelled"]);

/**
 * A task's stdout, followed across its attempts until the task ends: from its latest attempt when
 * asked, each attempt read by its number from its first byte until it ends, then the next one
 * after a line `--- attempt N on HOST ---` (a retry, a migration, a hold and release). `onText`
 * gets each piece. Returns a stop function.
 */
export function followLog(jobId, task, onText) {
  const controller = new AbortController();
  const { signal } = controller;
  const job = encodeURIComponent(jobId);
  const pause = (ms) => new Promise((done) => setTimeout(done, ms));
  const followAttempt = async (number) => {
    const response = await fetchHere(`/api/v1/jobs/${job}/logs?task=${task}&attempt=${number}&follow=1`, {
      headers: { authorization: `Bearer ${savedToken() ?? ""}` },
      signal,
    });
    if (!response.ok) throw new ApiError(response.status, await response.json().catch(() => null));
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) return;
      onText(value);
    }
  };
  (async () => {
    let next = null;
    let delay = 250;
    while (!signal.aborted) {
      const { state, attempts } = await call("GET", `/api/v1/jobs/${job}/tasks/${task}`, { signal });
      const latest = attempts.reduce((most, each) => Math.max(most, each.number), 0);
      const first = next === null;
      if (first) next = Math.max(1, latest);
      // The next attempt: `next` itself, or the first after it should a number be missing.
      const wanted = next;
      const attempt = attempts.filter((each) => each.number >= wanted).sort((a, b) => a.number - b.number)[0];
      if (attempt) {
        if (!first) onText(`--- attempt ${attempt.number} on ${attempt.host} ---\n`);
        await followAttempt(attempt.number);
        next = attempt.number + 1;
        delay = 250;
        continue;
      }
      if (ENDED.has(state) && latest < next) return;
      await pause(delay);
      delay = Math.min(2000, delay * 2);
    }
  })().catch((error) => {
    if (error instanceof ApiError) onText(`(no log: ${error.message})\n`);
  });
  return () => controller.abort();
}

/** Calls `fn` at most once per `ms`, the last call winning (events come in bursts). */
export function debounce(fn, ms) {
  let timer = null;
  return () => {
    if (timer) return;
    timer = setTimeout(() => {
      timer = null;
      fn();
    }, ms);
  };
}

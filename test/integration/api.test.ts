// The typed API against a real `steward up`: answers fit their schemas, bad parameters get a 400
// naming the field, the job list pages in order, and server-sent events resume from Last-Event-ID
// with every missed event once.

import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { streamEventSchema } from "../../src/common/api/events.ts";
import { hostSchema } from "../../src/common/api/hosts.ts";
import { jobSchema, jobSummarySchema } from "../../src/common/api/jobs.ts";
import {
  api,
  cleanup,
  cli,
  type EventStreamReader,
  getJob,
  jobPages,
  openEventStream,
  type StewardProcess,
  startUp,
} from "../helpers/steward.ts";

let steward: StewardProcess;
const streams: EventStreamReader[] = [];

beforeAll(async () => {
  steward = await startUp({ agents: 1, slots: 4 });
});

afterAll(async () => {
  for (const stream of streams) stream.close();
  await steward?.stop();
  cleanup(steward?.data);
});

async function events(query = "", lastEventId?: number) {
  const stream = await openEventStream(steward, { query, lastEventId });
  streams.push(stream);
  return stream;
}

/** Every stored event of every job, in id order: what an unfiltered stream from 0 would carry. */
async function storedEvents() {
  const jobs = (await api(steward, "GET", "/api/v1/jobs?all=1")) as { id: string }[];
  const all = [];
  for (const { id } of jobs) {
    for (const event of (await getJob(steward, id)).events) all.push({ ...event, jobId: id });
  }
  return all.sort((a, b) => a.id - b.id);
}

async function error(path: string, method = "GET") {
  const response = await fetch(steward.url + path, {
    method,
    headers: { authorization: `Bearer ${steward.token}` },
  });
  return { status: response.status, body: (await response.json()) as { error: Record<string, string> } };
}

describe("the typed API", () => {
  it("answers in the shapes of src/common/api/, events with their id and data", async () => {
    const { id } = await api(steward, "POST", "/api/v1/jobs", { command: "true", name: "shaped" });
    expect((await cli(steward, ["wait", id, "--timeout", "30"])).code).toBe(0);
    const job = jobSchema.parse(await api(steward, "GET", `/api/v1/jobs/${id}`));
    expect(job.tasks?.[0].attempts[0].outcome).toBe("succeeded");
    const kinds = job.events?.map((event) => event.kind);
    expect(kinds).toEqual(expect.arrayContaining(["submitted", "state", "attempt.placed"]));
    const placed = job.events?.find((event) => event.kind === "attempt.placed");
    expect(placed?.data).toEqual({ task: 0, attempt: 1, host: "local-1" });
    const ids = job.events?.map((event) => event.id) ?? [];
    expect(ids.every((eventId) => eventId > 0)).toBe(true);
    expect(new Set(ids).size).toBe(ids.length);
    jobSummarySchema.array().parse(await api(steward, "GET", "/api/v1/jobs?all=1"));
    hostSchema.array().parse(await api(steward, "GET", "/api/v1/hosts"));
  });

  it("answers a bad parameter with 400 and one line naming it, in the API's error shape", async () => {
    const cases: [string, string][] = [
      ["/api/v1/jobs?limit=0", "limit"],
      ["/api/v1/jobs?limit=1001", "limit"],
      ["/api/v1/jobs?limit=ten", "limit"],
      ["/api/v1/jobs?state=sleeping", "state"],
      ["/api/v1/jobs?all=maybe", "all"],
      ["/api/v1/jobs/1?tasks=no", "tasks"],
      ["/api/v1/jobs/1/logs?task=-1", "task"],
      ["/api/v1/jobs/1/logs?stream=stdin", "stream"],
      ["/api/v1/jobs/1/outputs/x/out.txt", "task"],
      ["/api/v1/events?after=-5", "after"],
    ];
    for (const [path, field] of cases) {
      const { status, body } = await error(path);
      expect(status, path).toBe(400);
      expect(body.error.code, path).toBe("invalid");
      expect(body.error.field, path).toBe(field);
      expect(body.error.message, path).toMatch(new RegExp(`^${field}: [^\\n]+$`));
    }
    const badId = await fetch(`${steward.url}/api/v1/events`, {
      headers: { authorization: `Bearer ${steward.token}`, "last-event-id": "yesterday" },
    });
    expect(badId.status).toBe(400);
    expect(((await badId.json()) as { error: { field: string } }).error.field).toBe("last-event-id");
    const noRoute = await error("/api/v1/jobs/1/bogus", "POST");
    expect(noRoute.status).toBe(404);
    expect(noRoute.body.error).toMatchObject({ code: "not_found" });
  });

  it("a submit repeated with its Idempotency-Key answers the same job; a bad key is refused", async () => {
    const send = (key: string) =>
      fetch(`${steward.url}/api/v1/jobs`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${steward.token}`,
          "content-type": "application/json",
          "idempotency-key": key,
        },
        body: JSON.stringify({ command: "true" }),
      });
    const first = await send("a-key-1");
    const again = await send("a-key-1");
    expect([first.status, again.status]).toStrictEqual([201, 201]);
    expect(((await again.json()) as { id: string }).id).toBe(((await first.json()) as { id: string }).id);
    const bad = await send("not a key!");
    expect(bad.status).toBe(400);
    expect(((await bad.json()) as { error: { field: string } }).error.field).toBe("Idempotency-Key");
  });

  it("a submit answers the new job's events as stored, ids and all; its repeat with the key the same", async () => {
    const send = (body: unknown) =>
      fetch(`${steward.url}/api/v1/jobs`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${steward.token}`,
          "content-type": "application/json",
          "idempotency-key": "events-key",
        },
        body: JSON.stringify(body),
      }).then(async (response) => ({ status: response.status, job: jobSchema.parse(await response.json()) }));
    // Never placed: no event but its own until it is cancelled.
    const first = await send({ command: "true", requirements: 'host.name == "nowhere"' });
    expect(first.status).toBe(201);
    expect(first.job.events?.map((event) => event.kind)).toStrictEqual(["submitted"]);
    expect(first.job.events?.[0].id).toBeGreaterThan(0);
    const shown = jobSchema.parse(await api(steward, "GET", `/api/v1/jobs/${first.job.id}`));
    expect(first.job.events).toStrictEqual(shown.events);
    // The repeat's events are read from the store: the job's cancellation is among them.
    await api(steward, "POST", `/api/v1/jobs/${first.job.id}/cancel`);
    const again = await send({ command: "true", requirements: 'host.name == "nowhere"' });
    expect(again.job.id).toBe(first.job.id);
    expect(again.job.events?.slice(0, 1)).toStrictEqual(first.job.events);
    expect(again.job.events?.map((event) => event.kind)).toContain("cancel");
  });

  it("a multipart submit repeated with its Idempotency-Key answers the same job, its inputs read past", async () => {
    const send = () => {
      const form = new FormData();
      form.append("job", JSON.stringify({ command: "cat in.txt", inputs: ["in.txt"] }));
      form.append("in.txt", new Blob(["hello"]), "in.txt");
      return fetch(`${steward.url}/api/v1/jobs`, {
        method: "POST",
        headers: { authorization: `Bearer ${steward.token}`, "idempotency-key": "a-multipart-key" },
        body: form,
      });
    };
    const first = await send();
    const again = await send();
    expect([first.status, again.status]).toStrictEqual([201, 201]);
    expect(((await again.json()) as { id: string }).id).toBe(((await first.json()) as { id: string }).id);
  });

  it("pages through every job once, in id order, following the Link header", async () => {
    const submitted: string[] = [];
    for (let i = 0; i < 7; i++) {
      submitted.push((await api(steward, "POST", "/api/v1/jobs", { command: "true" })).id);
    }
    expect((await cli(steward, ["wait", ...submitted, "--timeout", "60"])).code).toBe(0);
    const everything = ((await api(steward, "GET", "/api/v1/jobs?all=1")) as { id: string }[]).map(
      (job) => job.id,
    );
    expect(everything).toEqual([...everything].sort((a, b) => Number(a) - Number(b)));
    expect(everything).toEqual(expect.arrayContaining(submitted));

    const { pages, links } = await jobPages(steward, "all=1&limit=3");
    expect(pages.flat().map((job) => job.id)).toEqual(everything);
    expect(pages.every((page) => page.length <= 3)).toBe(true);
    expect(pages.slice(0, -1).every((page) => page.length === 3)).toBe(true);
    expect(links.at(-1)).toBeNull();
    expect(links[0]).toBe(`</api/v1/jobs?all=1&limit=3&after=${everything[2]}>; rel="next"`);

    // The job a next link names may be gone by then: the page still starts right after it.
    const cursor = everything[2];
    expect((await cli(steward, ["rm", cursor])).code).toBe(0);
    const next = (await api(steward, "GET", `/api/v1/jobs?all=1&limit=3&after=${cursor}`)) as {
      id: string;
    }[];
    expect(next.map((job) => job.id)).toEqual(everything.slice(3, 6));
    // Without a limit the list is whole, as `steward ps` has it.
    const ps = JSON.parse((await cli(steward, ["ps", "--all", "--json"])).stdout) as { id: string }[];
    expect(ps.map((job) => job.id)).toEqual(everything.filter((id) => id !== cursor));
  });

  it("resumes server-sent events from Last-Event-ID: the missed ones, then live ones, each once", async () => {
    // A job that never starts, held and released over and over: four events per round, no processes.
    const { id: parked } = await api(steward, "POST", "/api/v1/jobs", {
      command: "true",
      requirements: 'host.name == "nowhere"',
    });
    const round = async () => {
      await api(steward, "POST", `/api/v1/jobs/${parked}/hold`, {});
      await api(steward, "POST", `/api/v1/jobs/${parked}/release`, {});
    };

    const first = await events();
    for (let i = 0; i < 3; i++) await round();
    await first.until(
      "the first rounds' events",
      (got) => got.filter((e) => e.kind === "release").length >= 3,
    );
    first.close();
    const lastSeen = first.received.at(-1)?.eventId ?? 0;
    expect(lastSeen).toBeGreaterThan(0);
    expect(first.received.map((event) => event.eventId)).toEqual(first.received.map((event) => event.id));

    // Missed while away: more than one page of stored events (500), and a job that runs.
    for (let i = 0; i < 140; i++) await round();
    const { id: ran } = await api(steward, "POST", "/api/v1/jobs", { command: "true" });
    expect((await cli(steward, ["wait", ran, "--timeout", "30"])).code).toBe(0);

    // Back with Last-Event-ID while rounds go on: events committed during the catch-up come once.
    const during = (async () => {
      for (let i = 0; i < 20; i++) await round();
    })();
    const resumed = await events("", lastSeen);
    await during;
    const stored = await storedEvents();
    const expected = stored.filter((event) => event.id > lastSeen);
    expect(expected.length).toBeGreaterThan(600);
    const lastId = expected[expected.length - 1].id;
    await resumed.until(
      "every event up to the last one",
      (got) => got.some((e) => e.eventId >= lastId),
      30_000,
    );

    const got = resumed.received.map((event) => event.eventId);
    expect(new Set(got).size).toBe(got.length);
    expect(got).toEqual(expected.map((event) => event.id));
    expect(resumed.received.map(({ eventId: _, ...event }) => event)).toEqual(expected);
    for (const event of resumed.received) streamEventSchema.parse(event);

    // ?job= with ?after=: that job's stored events only.
    const one = await events(`job=${ran}&after=0`);
    const ranEvents = stored.filter((event) => event.jobId === ran);
    await one.until("the job's events", (got) => got.length >= ranEvents.length);
    expect(one.received.map((event) => event.eventId)).toEqual(ranEvents.map((event) => event.id));
  });
});

// The API's read model over a core: the core's answers handed on, a job's events and the accounting
// read from the store, each pool's note added to what explain says of a job that waits (none for a
// job that has ended) and of a draft, the committed events and progress listened to until the
// listening stops, and every call asking for the core anew (a standby's NotLeaderError at the call).

import { afterEach, beforeEach, expect, it } from "vitest";
import type { ReadModel as ApiReadModel } from "../../../../src/broker/api/ports.ts";
import type { PoolNote } from "../../../../src/broker/pools/pool-manager.ts";
import { NotLeaderError } from "../../../../src/broker/reactor/errors.ts";
import { apiReadModel } from "../../../../src/broker/server/api-reads.ts";
import type { Core } from "../../../../src/broker/server/core.ts";
import type { JobEntry } from "../../../../src/broker/state/job-entry.ts";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import type { EventRecord } from "../../../../src/common/model/records.ts";
import { ended, facts, Harness, hello, settle, submitOn } from "../../../helpers/core-harness.ts";

let harness: Harness;
let core: Core;
let leading: boolean;
let explained: string[];
let read: ApiReadModel;

const note = (job: JobEntry): PoolNote => ({
  pool: "batch",
  state: "ok",
  line: `batch: would take ${job.id}`,
});

beforeEach(async () => {
  harness = new Harness();
  core = await harness.start();
  leading = true;
  explained = [];
  read = apiReadModel(
    () => {
      if (!leading) throw new NotLeaderError(null);
      return core.read;
    },
    harness.store,
    (job) => {
      explained.push(job.id);
      return [note(job)];
    },
  );
});

afterEach(() => harness.close());

it("hands on the core's answers, and reads a job's events and the accounting from the store", async () => {
  const job = await submitOn(core, validateJobSpec({ command: "true", name: "one" }), "alice");
  expect(read.header(job.id)?.name).toBe("one");
  expect((await read.readJob(job.id)).header).toStrictEqual(job.header);
  expect(read.listJobs().map((header) => header.id)).toStrictEqual([job.id]);
  expect(await read.jobEvents(job.id)).toStrictEqual(await harness.store.events(job.id));
  expect((await read.jobEvents(job.id)).map((event) => event.kind)).toContain("submitted");
  const after = await read.eventsAfter(0, 10, job.id);
  expect(after.map((event) => event.id)).toStrictEqual(
    (await read.jobEvents(job.id)).map((event) => event.id),
  );
  expect(await read.accounting({ since: 0, limit: 10 })).toStrictEqual([]);
});

it("adds each pool's note to what explain says of a job that waits, and none to one that has ended", async () => {
  const job = await submitOn(core, validateJobSpec({ command: "true" }), "alice");
  const waiting = await read.explainJob(job.id, null);
  expect(waiting).toMatchObject({ id: job.id, state: "pending", pools: [note(job)] });
  expect(waiting.reasons).toStrictEqual((await core.read.explain(job.id)).reasons);
  await core.agents.attachHost(hello("h1"));
  core.heartbeat("h1", facts("h1"));
  await settle();
  const start = harness.starts()[0];
  await core.agents.attemptStarted("h1", job.id, 0, start.attempt);
  await core.agents.attemptEnded("h1", ended(job.id, start.attempt));
  expect(explained).toStrictEqual([job.id]);
  expect(await read.explainJob(job.id, null)).toMatchObject({ id: job.id, state: "succeeded", pools: [] });
  expect(explained).toStrictEqual([job.id]);
});

it("explains a draft with its pools' notes, as the job it would be", () => {
  const explanation = read.explainDraft(validateJobSpec({ command: "true" }), "alice", null, null);
  expect(explanation).toMatchObject({ state: "pending", pools: [{ pool: "batch", state: "ok" }] });
  expect(explained).toStrictEqual([explanation.id]);
});

it("hands committed events and progress to a listener until it stops listening", async () => {
  const events: EventRecord[] = [];
  const progress: string[] = [];
  const stop = read.watchEvents(
    (event) => events.push(event),
    (jobId) => progress.push(jobId),
  );
  const first = await submitOn(core, validateJobSpec({ command: "true" }), "alice");
  await settle();
  expect(events.map((event) => event.jobId)).toContain(first.id);
  expect(progress).toContain(first.id);
  stop();
  const heard = events.length;
  await submitOn(core, validateJobSpec({ command: "true" }), "alice");
  await settle();
  expect(events).toHaveLength(heard);
});

it("tells tokens apart through the core's registry, by id, by kind and by their text", async () => {
  expect(read.listTokens()).toStrictEqual([]);
  expect(read.token("nope")).toBeUndefined();
  expect(read.principalOf("sta_0000000000_" + "0".repeat(48), harness.now)).toBeNull();
  expect(read.matchToken("stj_0000000000_" + "0".repeat(48), "join", harness.now)).toBeNull();
});

it("asks for the leading core at each call: a standby's refusal comes from the call", async () => {
  leading = false;
  expect(() => read.header("1")).toThrow(NotLeaderError);
  // As the leading core's ports: asked when called, before any promise (the route's await rejects).
  expect(() => read.readJob("1")).toThrow(NotLeaderError);
  // The store answers on a standby too.
  expect(await read.jobEvents("1")).toStrictEqual([]);
});

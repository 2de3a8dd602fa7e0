import { describe, expect, test } from "vitest";
import { coalescePuts } from "../../../../src/broker/store/coalesce-puts.ts";
import type { Change } from "../../../../src/broker/store/store.ts";
import { attempt, event, job, task } from "../../../conformance/store-suite.ts";

const J = job("j");
const A1 = attempt("j", 0, 1);
const A2 = attempt("j", 1, 1);
const T0 = task("j", 0);
const T1 = task("j", 1);
const T2 = task("j", 2);
const E = event("j", 1, "hello");
/** Another object with A1's key: not the same record, so not dropped (the store's upsert orders them). */
const A1_COPY = attempt("j", 0, 1);

const putAttempt = (record = A1): Change => ({ op: "putAttempt", attempt: record });
const putTasks = (...tasks: (typeof T0)[]): Change => ({ op: "putTasks", tasks });
const putJob: Change = { op: "putJob", job: J };
const addEvent: Change = { op: "addEvent", event: E };
const deleteJob: Change = { op: "deleteJob", jobId: "j" };
const putNewTasks: Change = { op: "putNewTasks", jobId: "j", count: 3, state: "pending" };

describe("coalescePuts: every put of a record but its last is dropped, up to a job's removal", () => {
  const cases: { name: string; changes: Change[]; expected: Change[] }[] = [
    { name: "nothing", changes: [], expected: [] },
    {
      name: "one put of each record: all kept",
      changes: [putJob, putAttempt(A1), putAttempt(A2), putTasks(T0, T1), addEvent],
      expected: [putJob, putAttempt(A1), putAttempt(A2), putTasks(T0, T1), addEvent],
    },
    {
      name: "an attempt put twice (started, then ended): the last put stays, in its place",
      changes: [putAttempt(A1), putTasks(T0), putAttempt(A1), putTasks(T1)],
      expected: [putTasks(T0), putAttempt(A1), putTasks(T1)],
    },
    {
      name: "a task in two putTasks: dropped from the first, which keeps the others",
      changes: [putTasks(T0, T1, T2), putJob, putTasks(T1)],
      expected: [putTasks(T0, T2), putJob, putTasks(T1)],
    },
    {
      name: "a putTasks whose every task is put later goes",
      changes: [putTasks(T0, T1), putTasks(T1, T0)],
      expected: [putTasks(T1, T0)],
    },
    {
      name: "a task named twice in one putTasks: its last place",
      changes: [putTasks(T0, T1, T0)],
      expected: [putTasks(T1, T0)],
    },
    {
      name: "the job put by several steps: once, at the end",
      changes: [putJob, putAttempt(A1), putJob, addEvent, putJob],
      expected: [putAttempt(A1), addEvent, putJob],
    },
    {
      name: "events are never dropped",
      changes: [addEvent, addEvent],
      expected: [addEvent, addEvent],
    },
    {
      name: "records equal by key but not the same object: both kept",
      changes: [putAttempt(A1), putAttempt(A1_COPY)],
      expected: [putAttempt(A1), putAttempt(A1_COPY)],
    },
    {
      name: "a job's removal is a barrier: a put before it stays (its attempts are copied to accounting)",
      changes: [putAttempt(A1), putTasks(T0), deleteJob, putAttempt(A1), putTasks(T0)],
      expected: [putAttempt(A1), putTasks(T0), deleteJob, putAttempt(A1), putTasks(T0)],
    },
    {
      name: "puts on each side of a barrier coalesce on their own side",
      changes: [putAttempt(A1), putAttempt(A1), deleteJob, putAttempt(A1), putAttempt(A1)],
      expected: [putAttempt(A1), deleteJob, putAttempt(A1)],
    },
    {
      name: "a range that clears task rows between two puts of a task: the put after it stays",
      changes: [putTasks(T0), putNewTasks, putTasks(T0)],
      expected: [putNewTasks, putTasks(T0)],
    },
  ];
  test.each(cases)("$name", ({ changes, expected }) => {
    expect(coalescePuts(changes)).toEqual(expected);
  });

  test("the same array back when nothing is dropped", () => {
    const changes = [putJob, putAttempt(A1), putTasks(T0)];
    expect(coalescePuts(changes)).toBe(changes);
  });

  test("the records themselves are kept, not copies", () => {
    const [change] = coalescePuts([putTasks(T0, T1), putTasks(T1)]);
    expect(change.op === "putTasks" && change.tasks[0]).toBe(T0);
  });
});

// A pilot near its walltime (handlers/walltime.ts), as pure handlers (test/helpers/handler-bench.ts):
// a heartbeat of a pilot within its margin with work still running moves that work off (migrated,
// with its checkpoint), telling how long the pilot has left; a host without a walltime, or with
// time left, or with nothing left to move, is left alone.

import { describe, expect, it } from "vitest";
import { attachHost, attemptStarted } from "../../../../../src/broker/reactor/handlers/agent-reports.ts";
import { cancelTasks } from "../../../../../src/broker/reactor/handlers/control.ts";
import { submitJob } from "../../../../../src/broker/reactor/handlers/submit.ts";
import { leaveBeforeWalltime, walltimeDue } from "../../../../../src/broker/reactor/handlers/walltime.ts";
import { validateJobSpec } from "../../../../../src/common/model/job-spec.ts";
import { facts, hello } from "../../../../helpers/agent-messages.ts";
import { HandlerBench } from "../../../../helpers/handler-bench.ts";

const MARGIN = 60;

/** A bench with pilot p1 (three slots) whose walltime ends `secondsLeft` from now (none: null), running job "1" of `count` tasks. */
function pilot(secondsLeft: number | null, count = 1) {
  const bench = new HandlerBench();
  const endsAt = secondsLeft === null ? undefined : bench.now + secondsLeft * 1000;
  bench.run((step) => attachHost(step, { ...hello("p1", [], 3), ...(endsAt ? { endsAt } : {}) }));
  const job = bench.run((step) =>
    submitJob(step, {
      id: "1",
      spec: validateJobSpec({ command: "work", ...(count > 1 ? { array: { count } } : {}) }),
      owner: "alice",
      inputs: [],
    }),
  ).result;
  // Placed while the pilot had time: the clock moves on afterwards.
  bench.now -= 3_600_000;
  bench.schedule();
  bench.now += 3_600_000;
  for (const start of bench.starts()) bench.run((step) => attemptStarted(step, start.host, start));
  bench.effects = [];
  return { bench, job };
}

describe("a pilot's walltime", () => {
  it("is due only for a pilot within its margin with an attempt not being stopped", () => {
    const due = (bench: HandlerBench, host = "p1") =>
      bench.run((step) => walltimeDue(step, host, MARGIN)).result;
    expect(due(pilot(null).bench)).toBe(false);
    expect(due(pilot(61).bench)).toBe(false);
    expect(due(pilot(60).bench)).toBe(true);
    expect(due(pilot(30).bench, "p9")).toBe(false);
    const { bench, job } = pilot(30, 2);
    bench.run((step) => cancelTasks(step, job.id, [0]));
    expect(due(bench)).toBe(true);
    bench.run((step) => cancelTasks(step, job.id, [1]));
    expect(due(bench)).toBe(false);
    const idle = new HandlerBench();
    idle.run((step) => attachHost(step, { ...hello("p1"), endsAt: idle.now + 10_000 }));
    expect(due(idle)).toBe(false);
  });

  it("moves the pilot's attempts not being stopped, telling each task how long the pilot has left", () => {
    const { bench, job } = pilot(30.4, 3);
    bench.run((step) => cancelTasks(step, job.id, [2]));
    bench.effects = [];
    bench.run((step) => leaveBeforeWalltime(step, "p1", MARGIN));
    expect(bench.stops().map(({ taskIndex, outcome }) => ({ taskIndex, outcome }))).toEqual([
      { taskIndex: 0, outcome: "migrated" },
      { taskIndex: 1, outcome: "migrated" },
    ]);
    expect(
      bench
        .events(job.id)
        .filter((event) => event.kind === "walltime.migrate")
        .map((event) => event.data),
    ).toEqual([
      { task: 0, attempt: 1, host: "p1", secondsLeft: 30, marginSeconds: MARGIN, array: true },
      { task: 1, attempt: 1, host: "p1", secondsLeft: 30, marginSeconds: MARGIN, array: true },
    ]);
    const single = pilot(10);
    single.bench.run((step) => leaveBeforeWalltime(step, "p1", MARGIN));
    expect(single.bench.events("1").find((event) => event.kind === "walltime.migrate")?.data.array).toBe(
      false,
    );
  });

  it("moves nothing off a host without a walltime, one with time left, or one not known", () => {
    for (const [secondsLeft, host] of [
      [null, "p1"],
      [120, "p1"],
      [30, "p9"],
    ] as const) {
      const { bench } = pilot(secondsLeft);
      const handled = bench.run((step) => leaveBeforeWalltime(step, host, MARGIN));
      expect(handled.changes).toEqual([]);
      expect(handled.effects).toEqual([]);
    }
  });

  it("a heartbeat within the margin moves the work off; one with time left does not", () => {
    for (const [secondsLeft, stops] of [
      [30, 1],
      [120, 0],
    ] as const) {
      const { bench } = pilot(secondsLeft);
      bench.heartbeat("p1", facts("p1"));
      expect(bench.stops()).toHaveLength(stops);
    }
  });
});

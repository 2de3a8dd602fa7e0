// A migration's placement rule: the pure rules (where a migrating task may start, when the rule
// lapses, whether a migration away from a host has anywhere to go), then the handlers over them
// (test/helpers/handler-bench.ts): a migration with nowhere else to go is refused up front, and one
// accepted whose only other host went away restarts on the host it left once the rule lapses, with
// explain giving the pass's own reason meanwhile.

import { describe, expect, it } from "vitest";
import { explainJob } from "../../../../src/broker/planner/explain-job.ts";
import { planPass } from "../../../../src/broker/planner/plan-pass.ts";
import { ConflictError } from "../../../../src/broker/reactor/errors.ts";
import {
  attachHost,
  attemptEnded,
  attemptStarted,
} from "../../../../src/broker/reactor/handlers/agent-reports.ts";
import { drainHost, migrateJob } from "../../../../src/broker/reactor/handlers/control.ts";
import { submitJob } from "../../../../src/broker/reactor/handlers/submit.ts";
import {
  MIGRATION_WAIT_SECONDS,
  type MigrationTarget,
  migrationAllows,
  migrationLapsesAt,
  migrationRefusal,
  migrationTargets,
  migrationWaitReason,
} from "../../../../src/broker/scheduler/migration-rule.ts";
import type { HostView } from "../../../../src/broker/scheduler/view.ts";
import { validateJobSpec } from "../../../../src/common/model/job-spec.ts";
import type { MigrationIntent } from "../../../../src/common/model/records.ts";
import { ended, facts, hello } from "../../../helpers/agent-messages.ts";
import { HandlerBench } from "../../../helpers/handler-bench.ts";

const NOW = 1_000_000;
const AWAY: MigrationIntent = { to: null, from: "h1" };
const TO_H2: MigrationIntent = { to: "h2", from: "h1" };
const WAIT_MS = MIGRATION_WAIT_SECONDS * 1000;

describe("migrationAllows", () => {
  it.each([
    ["away: another host", AWAY, NOW + 1, "h2", true],
    ["away: the host it left, while the rule holds", AWAY, NOW + 1, "h1", false],
    ["away: the host it left, once the rule lapsed", AWAY, NOW, "h1", true],
    ["away: the host it left, its attempt not ended yet", AWAY, null, "h1", false],
    ["to h2: h2", TO_H2, NOW + 1, "h2", true],
    ["to h2: another host, while the rule holds", TO_H2, NOW + 1, "h3", false],
    ["to h2: the host it left, while the rule holds", TO_H2, NOW + 1, "h1", false],
    ["to h2: any host once the rule lapsed", TO_H2, NOW - 1, "h1", true],
  ] as const)("%s", (_case, rule, lapsesAt, host, allowed) => {
    expect(migrationAllows(rule, lapsesAt, NOW, host)).toBe(allowed);
  });
});

describe("migrationLapsesAt", () => {
  it.each([
    ["the stopped attempt ended", NOW, undefined, NOW + WAIT_MS],
    ["a wait of its own", NOW, 5, NOW + 5000],
    ["not ended yet", null, undefined, null],
  ] as const)("%s", (_case, endedAt, wait, lapsesAt) => {
    expect(migrationLapsesAt(endedAt, wait)).toBe(lapsesAt);
  });
});

describe("migrationWaitReason", () => {
  it.each([
    [
      "away, 25 s left",
      AWAY,
      NOW + 25_000,
      "task 3 is migrating away from h1: no other host matches and has room; it may start on h1 again in 25 s",
    ],
    [
      "to a host, part of a second left",
      TO_H2,
      NOW + 200,
      "task 3 is migrating to h2: h2 has no room for it; it may start on any host in 1 s",
    ],
    ["not ended yet", AWAY, null, "task 3 is migrating away from h1: no other host matches and has room"],
  ] as const)("%s", (_case, rule, lapsesAt, reason) => {
    expect(migrationWaitReason(3, rule, lapsesAt, NOW)).toBe(reason);
  });
});

function hostView(name: string, slotsFree: number, extra: Partial<HostView> = {}): HostView {
  return {
    name,
    state: "ready",
    connected: true,
    slots: 2,
    slotsFree,
    memoryFreeMb: 8192,
    facts: facts(name),
    ...extra,
  };
}

describe("migrationTargets and migrationRefusal", () => {
  const job = { cpus: 1, memoryMb: 100, requirements: null };
  it.each<[string, HostView[], string | null]>([
    ["the only host", [hostView("h1", 1)], "no other host matches and has room (h1 is the only host)"],
    ["another host with room", [hostView("h1", 0), hostView("h2", 1)], null],
    [
      "another host, busy",
      [hostView("h1", 1), hostView("h2", 0)],
      "no other host matches and has room (h2: busy: needs 1 free slots, 0 free)",
    ],
    [
      "other hosts that take no work",
      [hostView("h1", 1), hostView("h2", 2, { state: "draining" }), hostView("h3", 2, { connected: false })],
      "no other host matches and has room (h2: host is draining; h3: host agent is not connected)",
    ],
    [
      "three others: all named",
      ["h1", "h2", "h3", "h4"].map((name) => hostView(name, 0)),
      "no other host matches and has room (h2: busy: needs 1 free slots, 0 free; h3: busy: needs 1 free slots, 0 free; h4: busy: needs 1 free slots, 0 free)",
    ],
    [
      "many others: the first three named",
      ["h1", "h2", "h3", "h4", "h5"].map((name) => hostView(name, 0)),
      "no other host matches and has room (h2: busy: needs 1 free slots, 0 free; h3: busy: needs 1 free slots, 0 free; h4: busy: needs 1 free slots, 0 free; 1 more)",
    ],
  ])("%s", (_case, hosts, refusal) => {
    const targets: MigrationTarget[] = migrationTargets(job, hosts, "h1");
    expect(targets.map((target) => target.host)).not.toContain("h1");
    expect(migrationRefusal(targets, "h1")).toBe(refusal);
  });
});

/** A bench with the hosts attached and job 1 (`sleep 120`) running on h1. */
function runningOnH1(hosts: readonly string[]): HandlerBench {
  const bench = new HandlerBench();
  // h1 first, alone: the job starts there.
  bench.run((step) => attachHost(step, hello("h1")));
  bench.run((step) =>
    submitJob(step, { id: "1", spec: validateJobSpec({ command: "sleep 120" }), owner: "alice", inputs: [] }),
  );
  bench.schedule();
  expect(bench.starts()).toMatchObject([{ host: "h1", jobId: "1" }]);
  bench.run((step) => attemptStarted(step, "h1", { jobId: "1", taskIndex: 0, attempt: 1 }));
  for (const name of hosts.filter((each) => each !== "h1"))
    bench.run((step) => attachHost(step, hello(name)));
  bench.effects = [];
  return bench;
}

describe("migrate", () => {
  it("is refused up front when no other host matches and has room, and nothing is stopped", () => {
    const bench = runningOnH1(["h1"]);
    const migrate = () => bench.run((step) => migrateJob(step, "1", null));
    expect(migrate).toThrow(ConflictError);
    expect(migrate).toThrow(
      "job 1: not migrated: no other host matches and has room (h1 is the only host); use hold and release to restart it on h1",
    );
    expect(bench.stops()).toEqual([]);
    expect(bench.state.jobs.get("1")!.tasks[0].migration).toBeNull();
  });

  it("to the host it runs on says so", () => {
    const bench = runningOnH1(["h1"]);
    expect(() => bench.run((step) => migrateJob(step, "1", "h1"))).toThrow(
      "job 1 runs on h1 already: nothing to migrate",
    );
  });

  it("accepted, its only other host gone meanwhile: waits for the rule to lapse, then restarts on the host it left", () => {
    const bench = runningOnH1(["h1", "h2"]);
    bench.run((step) => migrateJob(step, "1", null));
    expect(bench.stops()).toMatchObject([{ host: "h1", jobId: "1" }]);
    // h2 takes no more work before the stopped attempt ends.
    bench.run((step) => drainHost(step, "h2"));
    bench.run((step) => attemptEnded(step, "h1", ended("1", 1, "migrated")));
    const endedAt = bench.now;

    bench.now += 1000;
    // The pass places nothing, and looks again when the rule lapses (no event would ask for it then).
    expect(planPass(bench.state, bench.now)).toMatchObject({ place: [], recheckAt: endedAt + WAIT_MS });
    bench.schedule();
    expect(bench.starts()).toEqual([]);
    const job = bench.state.jobs.get("1")!;
    const explained = explainJob(bench.state, job, bench.now);
    expect(explained.nextPass.line).toBe(
      `the next pass does not start it: task 0 is migrating away from h1: no other host matches and has room; it may start on h1 again in ${MIGRATION_WAIT_SECONDS - 1} s`,
    );
    expect(explained.nextPass.line).not.toContain("the free room goes to work ahead of it");

    bench.now = endedAt + WAIT_MS;
    bench.schedule();
    expect(bench.starts()).toMatchObject([{ host: "h1", jobId: "1", attempt: 2 }]);
    expect(bench.state.jobs.get("1")!.tasks[0].migration).toBeNull();
  });

  it("a migration kept in the store that can go nowhere restarts once its rule lapses after a restart", () => {
    const bench = runningOnH1(["h1", "h2"]);
    bench.run((step) => migrateJob(step, "1", "h2"));
    bench.run((step) => drainHost(step, "h2"));
    bench.run((step) => attemptEnded(step, "h1", ended("1", 1, "migrated")));
    bench.now += WAIT_MS + 1;
    const restarted = bench.restart();
    restarted.run((step) => attachHost(step, hello("h1")));
    restarted.schedule();
    expect(restarted.starts()).toMatchObject([{ host: "h1", jobId: "1", attempt: 2 }]);
  });
});

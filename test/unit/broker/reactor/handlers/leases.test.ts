// Leases (handlers/leases.ts), as pure handlers (test/helpers/handler-bench.ts): a host silent for
// longer than the host timeout is lost, its agent's connection closed and its attempts ended lost,
// the host's failure, naming how long it was silent; a host heard from within the timeout, or lost
// already, is left as it is.

import { describe, expect, it } from "vitest";
import { attachHost, attemptStarted } from "../../../../../src/broker/reactor/handlers/agent-reports.ts";
import { expireLeases } from "../../../../../src/broker/reactor/handlers/leases.ts";
import { submitJob } from "../../../../../src/broker/reactor/handlers/submit.ts";
import { validateJobSpec } from "../../../../../src/common/model/job-spec.ts";
import { hello } from "../../../../helpers/agent-messages.ts";
import { HandlerBench } from "../../../../helpers/handler-bench.ts";

/** A bench with h1 running job "1" and h2 idle, both last heard from now. */
function heard() {
  const bench = new HandlerBench();
  for (const name of ["h1", "h2"]) bench.run((step) => attachHost(step, hello(name, [], 1)));
  bench.run((step) =>
    submitJob(step, { id: "1", spec: validateJobSpec({ command: "work" }), owner: "alice", inputs: [] }),
  );
  bench.schedule();
  for (const start of bench.starts()) bench.run((step) => attemptStarted(step, start.host, start));
  bench.effects = [];
  return bench;
}

describe("a host's lease", () => {
  it("holds for the host timeout exactly; past it the host is lost, disconnected, its attempts lost naming the silence", () => {
    const bench = heard();
    const host = bench.state.jobs.get("1")!.attempt(0, 1)!.host;
    bench.now += 3000;
    const within = bench.run((step) => expireLeases(step, 3));
    expect(within.changes).toEqual([]);
    bench.now += 500;
    const past = bench.run((step) => expireLeases(step, 3));
    expect(["h1", "h2"].map((name) => bench.state.hosts.get(name)?.record.state)).toEqual(["lost", "lost"]);
    expect(past.effects.filter((effect) => effect.kind === "disconnect")).toEqual([
      { kind: "disconnect", host: "h1" },
      { kind: "disconnect", host: "h2" },
    ]);
    expect(bench.events("1").find((event) => event.kind === "attempt.lost")).toMatchObject({
      message: expect.stringContaining(`host ${host} silent for 3.5 s`),
      data: expect.objectContaining({ cause: "host" }),
    });
    expect(bench.state.jobs.get("1")?.tasks[0].state).toBe("pending");
  });

  it("of a host lost already is not taken again", () => {
    const bench = heard();
    bench.now += 10_000;
    bench.run((step) => expireLeases(step, 3));
    bench.now += 10_000;
    const again = bench.run((step) => expireLeases(step, 3));
    expect(again.changes).toEqual([]);
    expect(again.effects).toEqual([]);
  });
});

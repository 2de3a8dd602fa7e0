// The reactor's host lifecycle rules: undrain (a draining host takes work again, a lost one cannot
// be undrained), and removal (not of a connected host; the attempts still counted live end lost
// naming who removed it; the host credential is revoked; a restart keeps it gone). The handlers are
// run as pure functions (test/helpers/handler-bench.ts), a restart being the state rebuilt from
// the recorded changes; an agent's hello racing a removal goes through a Core on a real SQLite store.

import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { ConflictError, NotFoundError } from "../../../../../src/broker/reactor/errors.ts";
import { attachHost, attemptStarted } from "../../../../../src/broker/reactor/handlers/agent-reports.ts";
import { drainHost, removeHost, undrainHost } from "../../../../../src/broker/reactor/handlers/control.ts";
import { expireLeases } from "../../../../../src/broker/reactor/handlers/leases.ts";
import { submitJob } from "../../../../../src/broker/reactor/handlers/submit.ts";
import { issueHostCredential } from "../../../../../src/broker/reactor/handlers/tokens.ts";
import type { Step } from "../../../../../src/broker/reactor/step.ts";
import type { ClusterState } from "../../../../../src/broker/state/cluster-state.ts";
import type { JobEntry } from "../../../../../src/broker/state/job-entry.ts";
import { agentDetached } from "../../../../../src/broker/state/soft-state.ts";
import { validateJobSpec } from "../../../../../src/common/model/job-spec.ts";
import { newTokenOf } from "../../../../../src/common/model/tokens.ts";
import { hello } from "../../../../helpers/agent-messages.ts";
import { Harness } from "../../../../helpers/core-harness.ts";
import { HandlerBench } from "../../../../helpers/handler-bench.ts";

/** The host as the API lists it. */
const hostOf = (state: ClusterState, name: string) => state.hostList().find((host) => host.name === name);

function submit(bench: HandlerBench, command: string): JobEntry {
  return bench.run((step) =>
    submitJob(step, { id: "1", spec: validateJobSpec({ command }), owner: "alice", inputs: [] }),
  ).result;
}

/** An agent's hello as Core runs it when the agent joins (`parent` given): its credential issued in the same step. */
function attach(step: Step, name: string, parent?: string | null): void {
  if (parent !== undefined) issueHostCredential(step, name, "default", parent, newTokenOf("host"));
  attachHost(step, hello(name));
}

describe("handlers", () => {
  it("a draining host takes no work; undrained, it does, and a restart keeps it ready", () => {
    const bench = new HandlerBench();
    bench.run((step) => attach(step, "h1"));
    bench.run((step) => drainHost(step, "h1"));
    const job = submit(bench, "true");
    bench.schedule();
    expect(bench.starts()).toEqual([]);

    expect(bench.run((step) => undrainHost(step, "h1")).result.state).toBe("ready");
    bench.schedule();
    expect(bench.starts()).toMatchObject([{ host: "h1", jobId: job.id }]);
    expect(hostOf(bench.state, "h1")?.liveAttempts).toBe(1);
    // Undraining a ready host answers it as it is.
    expect(bench.run((step) => undrainHost(step, "h1")).result.state).toBe("ready");

    expect(hostOf(bench.recovered(), "h1")?.state).toBe("ready");
  });

  it("a lost host cannot be undrained; an unknown one is not found", () => {
    const bench = new HandlerBench();
    bench.run((step) => attach(step, "h1"));
    bench.now += 4000;
    bench.run((step) => expireLeases(step, 3));
    expect(hostOf(bench.state, "h1")?.state).toBe("lost");
    expect(() => bench.run((step) => undrainHost(step, "h1"))).toThrow(ConflictError);
    expect(() => bench.run((step) => undrainHost(step, "h1"))).toThrow("host h1 is lost");
    expect(() => bench.run((step) => undrainHost(step, "nohost"))).toThrow(NotFoundError);
    expect(() => bench.run((step) => removeHost(step, "nohost"))).toThrow(NotFoundError);
  });

  it("removes a disconnected host: its attempt ends lost naming who removed it, its credential is revoked", () => {
    const bench = new HandlerBench();
    bench.run((step) => attach(step, "h1", null));
    expect(bench.state.tokens.credentialOf("h1", bench.now)).toBeDefined();
    const job = submit(bench, "sleep 600");
    bench.schedule();
    bench.run((step) => attemptStarted(step, "h1", { jobId: job.id, taskIndex: 0, attempt: 1 }));

    expect(() => bench.run((step) => removeHost(step, "h1", "bob"))).toThrow(
      "host h1 is connected: drain it and stop its agent first",
    );
    agentDetached(bench.state, "h1");
    const revoked = bench.run((step) => removeHost(step, "h1", "bob")).result;
    expect(revoked).toHaveLength(1);
    expect(hostOf(bench.state, "h1")).toBeUndefined();
    expect(bench.state.tokens.credentialOf("h1", bench.now)).toBeUndefined();
    const task = bench.state.jobs.get(job.id)!.tasks[0];
    expect(task.state).not.toBe("running");
    expect(bench.events(job.id).map((event) => event.message)).toContainEqual(
      expect.stringContaining("host h1 removed by bob"),
    );

    const restarted = bench.recovered();
    expect(hostOf(restarted, "h1")).toBeUndefined();
    expect(restarted.tokens.credentialOf("h1", bench.now)).toBeUndefined();
  });
});

describe("on a Core", () => {
  let harness: Harness;

  beforeEach(async () => {
    harness = new Harness();
    await harness.start();
  });

  afterEach(async () => {
    await harness.close();
  });

  it("an agent let in by its credential just before the host was removed is not attached", async () => {
    const { core } = harness;
    await core.agents.attachHost(hello("h1"), { parent: null });
    core.detachHost("h1");
    // Admission checked the credential; the removal's step runs before the hello's.
    const removal = core.hosts.removeHost("h1", "bob");
    const attach = core.agents
      .attachHost({ ...hello("h1"), credential: "sth_kept_secret" })
      .catch((error) => error);
    await removal;
    expect(String(await attach)).toContain("the host credential of h1 was revoked meanwhile");
    expect(core.read.hostOf("h1")).toBeUndefined();
  });
});

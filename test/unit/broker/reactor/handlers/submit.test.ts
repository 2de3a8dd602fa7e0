// A job run in place (its workdir) through the handlers on the state alone: admitted while no host
// shares any folder (it waits, explain saying which folder and that no host shares it), refused
// naming workdir when hosts share folders and none holds it (a dry run too; an update, which cannot
// change it, is not), started only on a host sharing a folder that holds it, its start telling the
// agent the folder.

import { describe, expect, it } from "vitest";
import { explainJob } from "../../../../../src/broker/planner/explain-job.ts";
import { InvalidRequestError } from "../../../../../src/broker/reactor/errors.ts";
import { attachHost } from "../../../../../src/broker/reactor/handlers/agent-reports.ts";
import { removeHost } from "../../../../../src/broker/reactor/handlers/control.ts";
import { admitSpec, submitJob } from "../../../../../src/broker/reactor/handlers/submit.ts";
import { updateJob } from "../../../../../src/broker/reactor/handlers/update.ts";
import { agentDetached } from "../../../../../src/broker/state/soft-state.ts";
import { validateJobSpec } from "../../../../../src/common/model/job-spec.ts";
import { facts, hello } from "../../../../helpers/agent-messages.ts";
import { HandlerBench } from "../../../../helpers/handler-bench.ts";

/** A host whose agent shares these folders (--shared). */
function sharing(name: string, shared?: string[]) {
  return { ...hello(name), facts: facts(name, shared === undefined ? {} : { shared }) };
}

function submit(b: HandlerBench, id: string, workdir: string) {
  return b.run((step) =>
    submitJob(step, {
      id,
      spec: validateJobSpec({ command: "./cfd", workdir }),
      owner: "alice",
      inputs: [],
    }),
  );
}

const MESSAGE =
  "/dat/run1 is in no folder the hosts share (they share /data, /scratch): a job runs in place only in a shared folder";

const WAITS =
  "its workdir /data/run1 is in no folder a host shares (no host shares a folder): it waits for a host that shares one holding it (an agent's --shared)";

describe("a job with a workdir", () => {
  it("waits while no host shares any folder, explain saying so; starts once a host sharing it joins", () => {
    const b = new HandlerBench();
    b.run((step) => attachHost(step, sharing("plain")));
    const { result: job } = submit(b, "1", "/data/run1");
    b.settle();
    expect(b.starts()).toEqual([]);
    expect(job.tasks[0].state).toBe("pending");
    const explained = explainJob(b.state, job, b.now);
    expect(explained.reasons).toContain(WAITS);
    expect(explained.hosts).toEqual([
      {
        host: "plain",
        eligible: false,
        reason: "workdir /data/run1 is in no folder this host shares (it shares no folder)",
      },
    ]);

    b.run((step) => attachHost(step, sharing("nfs", ["/scratch", "/data"])));
    b.settle();
    const [start] = b.starts();
    expect(start).toMatchObject({ host: "nfs", jobId: "1", workdir: "/data/run1", inputs: [], outputs: [] });
    expect(explainJob(b.state, job, b.now).reasons).not.toContain(WAITS);
  });

  it("is refused at submit, naming workdir, when hosts share folders and none holds it", () => {
    const b = new HandlerBench();
    b.run((step) => attachHost(step, sharing("nfs", ["/data", "/scratch"])));
    const refusal = new InvalidRequestError("workdir", MESSAGE);
    expect(() => submit(b, "1", "/dat/run1")).toThrow(refusal);
    expect(b.state.jobs.size).toBe(0);
    // A dry run (and an update, a workflow, a retry) is admitted the same way.
    expect(() =>
      admitSpec(b.state, validateJobSpec({ command: "x", workdir: "/dat/run1" }), "alice", null),
    ).toThrow(refusal);
    // A workflow's job is named by its place.
    expect(() =>
      admitSpec(b.state, validateJobSpec({ command: "x", workdir: "/dat/run1" }), "alice", null, {
        field: "jobs.solve.",
      }),
    ).toThrow(new InvalidRequestError("jobs.solve.workdir", MESSAGE));
    // A disconnected host's folders count: it shares them still when it comes back.
    agentDetached(b.state, "nfs");
    expect(submit(b, "2", "/scratch/run1").result.id).toBe("2");
  });

  it("waits again, explain listing the folders shared, once the only host sharing it is gone", () => {
    const b = new HandlerBench();
    b.run((step) => attachHost(step, sharing("nfs", ["/data"])));
    b.run((step) => attachHost(step, sharing("other", ["/scratch"])));
    const { result: job } = submit(b, "1", "/data/run1");
    agentDetached(b.state, "nfs");
    b.run((step) => removeHost(step, "nfs"));
    // An update, which cannot change the workdir, is not refused for it.
    b.run((step) => updateJob(step, { id: "1", update: { priority: 3 }, by: "alice" }));
    expect(job.priority).toBe(3);
    expect(explainJob(b.state, job, b.now).reasons).toContain(
      "its workdir /data/run1 is in no folder a host shares (the hosts share only /scratch): it waits for a host that shares one holding it (an agent's --shared)",
    );
  });

  it("counts the folders pools' pilots will share, before any pilot has joined", () => {
    const b = new HandlerBench();
    b.state.poolFolders = ["/lustre"];
    b.run((step) => attachHost(step, sharing("nfs", ["/data"])));
    // Admitted: a pool's pilots will share /lustre, though no host shares it yet.
    const { result: job } = submit(b, "1", "/lustre/run1");
    b.settle();
    expect(b.starts()).toEqual([]);
    // It waits for a pilot, not for a host to share the folder one day.
    expect(explainJob(b.state, job, b.now).reasons.join("\n")).not.toContain("is in no folder a host shares");
    // A folder neither the hosts nor the pools share is refused, the pools' folders listed too.
    expect(() => submit(b, "2", "/dat/run1")).toThrow(
      new InvalidRequestError(
        "workdir",
        "/dat/run1 is in no folder the hosts share (they share /data, /lustre): a job runs in place only in a shared folder",
      ),
    );
  });

  it("leaves a job without a workdir as it was: any host, no folder in its start", () => {
    const b = new HandlerBench();
    b.run((step) => attachHost(step, sharing("plain")));
    const { result: job } = b.run((step) =>
      submitJob(step, { id: "1", spec: validateJobSpec({ command: "true" }), owner: "alice", inputs: [] }),
    );
    b.settle();
    const [start] = b.starts();
    expect(start.host).toBe("plain");
    expect(start).not.toHaveProperty("workdir");
    expect(job.workdir).toBeUndefined();
  });
});

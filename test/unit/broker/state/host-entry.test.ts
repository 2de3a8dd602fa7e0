// reportedAttempts: the live attempts of a host that its agent's reports name, in the reports'
// order, each with its report and key; the reports of attempts the host does not hold are passed
// over, and so are all of them for a host the state does not know.

import { describe, expect, it } from "vitest";
import { type LiveAttempt, newHostEntry, reportedAttempts } from "../../../../src/broker/state/host-entry.ts";
import { facts } from "../../../helpers/agent-messages.ts";

/** A host holding attempt 1 of tasks 0 and 1 of job 7, each a live attempt told apart by its name. */
function hostHolding() {
  const host = newHostEntry(
    {
      name: "h1",
      pool: "default",
      state: "ready",
      slots: 2,
      labels: {},
      facts: facts("h1"),
      lastSeen: 0,
      endsAt: null,
    },
    true,
  );
  for (const key of ["7/0/1", "7/1/1"]) host.active.set(key, { name: key } as unknown as LiveAttempt);
  return host;
}

const report = (taskIndex: number, attempt: number, fraction = 0.5) => ({
  jobId: "7",
  taskIndex,
  attempt,
  fraction,
});

describe("reportedAttempts", () => {
  it("names each held attempt a report names, in the reports' order, with its report and key", () => {
    const reports = [report(1, 1, 0.25), report(0, 2), report(3, 1), report(0, 1, 0.75)];
    const found = [...reportedAttempts(hostHolding(), reports)].map(({ report, key, live }) => [
      report.fraction,
      key,
      (live as unknown as { name: string }).name,
    ]);
    expect(found).toStrictEqual([
      [0.25, "7/1/1", "7/1/1"],
      [0.75, "7/0/1", "7/0/1"],
    ]);
  });

  it("names none for a host the state does not know", () => {
    expect([...reportedAttempts(undefined, [report(0, 1)])]).toStrictEqual([]);
  });
});

// `steward show flow-N` as text (cli/workflow-graph.ts): the table of jobs in the graph's order with
// what each waits for, the edge lines with both ends' states, and long lists cut short.

import { describe, expect, it } from "vitest";
import { edgeLines, renderWorkflow, SHOWN_JOBS, SHOWN_NAMES } from "../../../src/cli/workflow-graph.ts";
import type { Workflow } from "../../../src/common/api/workflows.ts";

type Member = Workflow["graph"][number];
const counts = { pending: 0, running: 0, succeeded: 0, failed: 0, cancelled: 0 };

function member(
  name: string,
  state: Member["state"],
  on: (string | [string, "ended" | "failed"])[] = [],
): Member {
  return {
    name,
    job: String(name.length),
    state,
    taskCount: 1,
    counts,
    endedAt: null,
    dependsOn: on.map((each) =>
      typeof each === "string"
        ? { name: each, when: "succeeded", sameTasks: false }
        : { name: each[0], when: each[1], sameTasks: false },
    ),
  };
}

const diamond = [
  member("a", "succeeded"),
  member("b", "failed", ["a"]),
  member("c", "running", [["a", "ended"]]),
  member("d", "cancelled", ["b", "c"]),
];

describe("edgeLines", () => {
  it.each<[string, Member[], string[]]>([
    ["one job", [member("a", "pending")], []],
    [
      "a diamond",
      diamond,
      [
        "a (succeeded) -> b (failed), c (running)",
        "b (failed) -> d (cancelled)",
        "c (running) -> d (cancelled)",
      ],
    ],
    ["a removed job", [member("a", null), member("b", "cancelled", ["a"])], ["a (removed) -> b (cancelled)"]],
    [
      "a fan-out cut short",
      [member("r", "succeeded"), ...Array.from({ length: 12 }, (_, i) => member(`m${i}`, "pending", ["r"]))],
      [
        `r (succeeded) -> ${Array.from({ length: SHOWN_NAMES }, (_, i) => `m${i} (pending)`).join(", ")} and 2 more`,
      ],
    ],
  ])("%s", (_, graph, lines) => {
    expect(edgeLines(graph)).toEqual(lines);
  });
});

describe("renderWorkflow", () => {
  const workflow = (graph: Member[]): Workflow => ({
    workflow: "flow-3",
    name: "diamond",
    jobs: Object.fromEntries(graph.map((each) => [each.name, each.job])),
    owner: "alice",
    createdAt: "2026-01-01T00:00:00.000Z",
    state: "running",
    graph,
  });

  it("heads with the id, name, owner, state and counts; lists what each job waits for", () => {
    const text = renderWorkflow(workflow(diamond));
    expect(text).toContain("workflow flow-3  diamond  owner alice\n");
    expect(text).toContain("state running  jobs 4: 1 succeeded, 1 running, 1 failed, 1 cancelled\n");
    expect(text).toMatch(/\nc +1 +running +1 +a \(ended\)\n/);
    expect(text).toMatch(/\nd +1 +cancelled +1 +b, c\n/);
    expect(text).toContain("graph:\n  a (succeeded) -> b (failed), c (running)\n");
  });

  it("lists the first jobs of a big workflow and says how many more", () => {
    const graph = Array.from({ length: SHOWN_JOBS + 5 }, (_, i) => member(`j${i}`, "pending"));
    const text = renderWorkflow(workflow(graph));
    expect(text).toContain(`\nj${SHOWN_JOBS - 1} `);
    expect(text).not.toContain(`\nj${SHOWN_JOBS} `);
    expect(text).toContain("... 5 more jobs (use --json)");
  });
});

// `steward show flow-ID`: a workflow as text, its jobs each after those they wait for, with each
// job's state, then its edges (`a (succeeded) -> b (failed), c (running)`).

import type { Workflow } from "../common/api/workflows.ts";
import { table } from "./format.ts";

type Member = Workflow["graph"][number];

/** The most jobs the table lists, and the most names an edge line or a WAITS FOR cell gives (--json has all). */
export const SHOWN_JOBS = 200;
export const SHOWN_NAMES = 10;

/** Names, the first SHOWN_NAMES of them, then how many more. */
function names(list: readonly string[]): string {
  if (list.length <= SHOWN_NAMES) return list.join(", ");
  return `${list.slice(0, SHOWN_NAMES).join(", ")} and ${list.length - SHOWN_NAMES} more`;
}

function stateOf(member: Member): string {
  return member.state ?? "removed";
}

/** What a job waits for, by name, with the kind when it is not a success (`a (ended)`, `b (same tasks)`). */
function waitsFor(member: Member): string {
  if (member.dependsOn.length === 0) return "-";
  return names(
    member.dependsOn.map((edge) => {
      const kinds = [edge.when === "succeeded" ? "" : edge.when, edge.sameTasks ? "same tasks" : ""].filter(
        Boolean,
      );
      return kinds.length === 0 ? edge.name : `${edge.name} (${kinds.join(", ")})`;
    }),
  );
}

/** The edges, one line per job that others wait for: `a (succeeded) -> b (failed), c (running)`. */
export function edgeLines(graph: readonly Member[]): string[] {
  const byName = new Map(graph.map((member) => [member.name, member]));
  const dependants = new Map<string, string[]>();
  for (const member of graph)
    for (const name of new Set(member.dependsOn.map((edge) => edge.name))) {
      const list = dependants.get(name) ?? [];
      list.push(member.name);
      dependants.set(name, list);
    }
  const lines: string[] = [];
  for (const member of graph) {
    const after = dependants.get(member.name);
    if (!after) continue;
    const targets = names(after.map((name) => `${name} (${stateOf(byName.get(name)!)})`));
    lines.push(`${member.name} (${stateOf(member)}) -> ${targets}`);
  }
  return lines;
}

export function renderWorkflow(workflow: Workflow): string {
  const count = (state: string) => workflow.graph.filter((member) => stateOf(member) === state).length;
  const summary = ["succeeded", "running", "pending", "waiting", "held", "failed", "cancelled", "removed"]
    .map((state) => [state, count(state)] as const)
    .filter(([, n]) => n > 0)
    .map(([state, n]) => `${n} ${state}`)
    .join(", ");
  const lines = [
    `workflow ${workflow.workflow}${workflow.name ? `  ${workflow.name}` : ""}  owner ${workflow.owner}`,
    `state ${workflow.state}  jobs ${workflow.graph.length}: ${summary}`,
    "",
    table(
      ["NAME", "JOB", "STATE", "TASKS", "WAITS FOR"],
      workflow.graph
        .slice(0, SHOWN_JOBS)
        .map((member) => [
          member.name,
          member.job,
          stateOf(member),
          member.taskCount === 1 ? "1" : `${member.counts.succeeded}/${member.taskCount}`,
          waitsFor(member),
        ]),
    ),
  ];
  if (workflow.graph.length > SHOWN_JOBS)
    lines.push(`... ${workflow.graph.length - SHOWN_JOBS} more jobs (use --json)`);
  const edges = edgeLines(workflow.graph);
  if (edges.length > 0) lines.push("", "graph:", ...edges.slice(0, SHOWN_JOBS).map((line) => `  ${line}`));
  if (edges.length > SHOWN_JOBS) lines.push(`  ... ${edges.length - SHOWN_JOBS} more (use --json)`);
  return `${lines.join("\n")}\n`;
}

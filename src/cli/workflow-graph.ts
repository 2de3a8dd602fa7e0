// `steward show flow-ID`: a workflow as text, its jobs each after those they wait for, with each
// job's state, then its edges (`a (succeeded) -> b (failed), c (running)`).

import type { Workflow } from "../broker/api/schemas.ts";
import { table } from "./format.ts";

type Member = Workflow["graph"][number];

function stateOf(member: Member): string {
  return member.state ?? "removed";
}

/** What a job waits for, by name, with the kind when it is not a success (`a (ended)`, `b (same tasks)`). */
function waitsFor(member: Member): string {
  if (member.dependsOn.length === 0) return "-";
  return member.dependsOn
    .map((edge) => {
      const kinds = [edge.when === "succeeded" ? "" : edge.when, edge.sameTasks ? "same tasks" : ""].filter(
        Boolean,
      );
      return kinds.length === 0 ? edge.name : `${edge.name} (${kinds.join(", ")})`;
    })
    .join(", ");
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
    const targets = after.map((name) => `${name} (${stateOf(byName.get(name)!)})`).join(", ");
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
      workflow.graph.map((member) => [
        member.name,
        member.job,
        stateOf(member),
        member.taskCount === 1 ? "1" : `${member.counts.succeeded}/${member.taskCount}`,
        waitsFor(member),
      ]),
    ),
  ];
  const edges = edgeLines(workflow.graph);
  if (edges.length > 0) lines.push("", "graph:", ...edges.map((line) => `  ${line}`));
  return `${lines.join("\n")}\n`;
}

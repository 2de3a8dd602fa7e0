// A workflow file: named jobs in one file (`jobs: {NAME: job file}`), each job's dependsOn naming
// other jobs of the workflow by NAME, with the kinds of dependsOn (model/dependencies.ts). A
// workflow is self-contained: its dependsOn name jobs of the same file only (an id of a job made
// before is refused as an unknown name), so that the workflow alone says in which order its jobs
// run and what its retry reruns. The checks here are pure: names, references, cycles, and every
// job file as a submit checks it, its errors prefixed with `jobs.NAME.`.

import { type DependencyCondition, dependenciesOf, sameTasksProblem } from "./dependencies.ts";
import { type JobSpec, taskCount, validateJobSpec } from "./job-spec.ts";
import { type FieldPath, formatFieldPath, JobFileError } from "./jobfile-error.ts";
import { nearestKey } from "./key-suggestion.ts";
import { isEndedState, type JobState } from "./states.ts";

/** A job's name in a workflow: a letter or `_` first (so it is never a job id), then letters, digits, `_`, `.`, `-`. */
export const WORKFLOW_JOB_NAME = /^[A-Za-z_][A-Za-z0-9_.-]{0,62}$/;

/** The most jobs one workflow file may hold. */
export const MAX_WORKFLOW_JOBS = 20_000;

/** An edge of the workflow: the job named waits for `name` as `when` says. */
export interface WorkflowEdge {
  name: string;
  when: DependencyCondition;
  sameTasks: boolean;
}

/** A job of a workflow file, checked: its name, its job file (dependsOn still by name), its edges. */
export interface WorkflowJobFile {
  name: string;
  spec: JobSpec;
  dependsOn: WorkflowEdge[];
}

export interface WorkflowFile {
  name: string | null;
  /** The jobs in an order where each comes after every job it depends on (file order otherwise). */
  jobs: WorkflowJobFile[];
}

const WORKFLOW_KEYS = new Set(["name", "jobs"]);

/** Whether a parsed file is a workflow file (a mapping with a top-level `jobs`) rather than a job file. */
export function isWorkflowFile(input: unknown): boolean {
  return input !== null && typeof input === "object" && !Array.isArray(input) && "jobs" in input;
}

/** Checks a parsed workflow file; throws JobFileError naming the first bad field. */
export function validateWorkflowFile(input: unknown): WorkflowFile {
  if (input === null || typeof input !== "object" || Array.isArray(input))
    throw new JobFileError("", "a workflow file must be a mapping with `jobs`");
  const record = input as Record<string, unknown>;
  for (const key of Object.keys(record))
    if (!WORKFLOW_KEYS.has(key)) {
      const meant = nearestKey(key, [...WORKFLOW_KEYS]);
      throw new JobFileError([key], `unknown key${meant === null ? "" : ` (did you mean ${meant}?)`}`);
    }
  const name = record.name ?? null;
  if (name !== null && (typeof name !== "string" || name.length === 0 || name.length > 200))
    throw new JobFileError("name", "a workflow's name is a string of 1 to 200 characters");
  const jobs = record.jobs;
  if (jobs === null || typeof jobs !== "object" || Array.isArray(jobs))
    throw new JobFileError("jobs", "a mapping of job names to job files");
  const entries = Object.entries(jobs as Record<string, unknown>);
  if (entries.length === 0) throw new JobFileError("jobs", "a workflow has at least one job");
  if (entries.length > MAX_WORKFLOW_JOBS)
    throw new JobFileError(
      "jobs",
      `at most ${MAX_WORKFLOW_JOBS} jobs in a workflow, this one has ${entries.length}`,
    );
  const files: WorkflowJobFile[] = [];
  for (const [jobName, raw] of entries) {
    if (!WORKFLOW_JOB_NAME.test(jobName))
      throw new JobFileError(
        ["jobs", jobName],
        "a job's name is a letter or _ then letters, digits, _, . or - (at most 63)",
      );
    let spec: JobSpec;
    try {
      spec = validateJobSpec(raw);
    } catch (error) {
      if (error instanceof JobFileError) throw error.under(["jobs", jobName]);
      throw error;
    }
    const dependsOn = dependenciesOf(spec.dependsOn).map((dependency) => ({
      name: dependency.job,
      when: dependency.when,
      sameTasks: dependency.sameTasks,
    }));
    files.push({ name: jobName, spec, dependsOn });
  }
  const problem = referenceProblem(files);
  if (problem) throw new JobFileError(problem.path, problem.message);
  const cycle = findCycle(files);
  if (cycle) throw new JobFileError(cycleEdgePath(files, cycle), `cycle: ${cycle.join(" -> ")}`);
  return { name, jobs: topologicalOrder(files) };
}

/**
 * The dependsOn entry where a cycle starts (`jobs.a.dependsOn[0]`, a's wait for the next job). A
 * cycle of findCycle runs along edges of these jobs: its first job is one of them, and waits for
 * the second.
 */
function cycleEdgePath(jobs: readonly WorkflowJobFile[], cycle: readonly string[]): FieldPath {
  const first = jobs.find((job) => job.name === cycle[0])!;
  return ["jobs", cycle[0], "dependsOn", first.dependsOn.findIndex((edge) => edge.name === cycle[1])];
}

/**
 * The first dependsOn entry that names no job of the workflow, or pairs arrays of different sizes
 * under `tasks: same`; null when all are right.
 */
export function referenceProblem(
  jobs: readonly WorkflowJobFile[],
): { field: string; path: FieldPath; message: string } | null {
  const byName = new Map(jobs.map((job) => [job.name, job]));
  for (const job of jobs) {
    for (const [index, edge] of job.dependsOn.entries()) {
      const other = byName.get(edge.name);
      const path: FieldPath = ["jobs", job.name, "dependsOn", index];
      if (!other) {
        const message = `no job named ${edge.name} in the workflow`;
        return { field: formatFieldPath(path), path, message };
      }
      if (!edge.sameTasks) continue;
      const problem = sameTasksProblem(edge.name, taskCount(job.spec), taskCount(other.spec));
      if (problem) {
        const tasks = [...path, "tasks"];
        return { field: formatFieldPath(tasks), path: tasks, message: problem };
      }
    }
  }
  return null;
}

/**
 * A cycle of dependsOn, as the names along it with the first again at the end (`a -> b -> a`), or
 * null when there is none. Every name must be known (referenceProblem first).
 */
export function findCycle(
  jobs: readonly { name: string; dependsOn: readonly { name: string }[] }[],
): string[] | null {
  const edges = new Map(jobs.map((job) => [job.name, job.dependsOn.map((edge) => edge.name)]));
  // 0: not seen, 1: on the current path, 2: done. Iterative, so that a long chain does not overflow the stack.
  const mark = new Map<string, number>();
  for (const start of edges.keys()) {
    if (mark.get(start)) continue;
    const path: string[] = [start];
    const next: number[] = [0];
    mark.set(start, 1);
    while (path.length > 0) {
      const at = path[path.length - 1];
      const targets = edges.get(at) ?? [];
      const i = next[next.length - 1]++;
      if (i >= targets.length) {
        mark.set(at, 2);
        path.pop();
        next.pop();
        continue;
      }
      const target = targets[i];
      const seen = mark.get(target) ?? 0;
      if (seen === 1) return [...path.slice(path.indexOf(target)), target];
      if (seen === 0) {
        mark.set(target, 1);
        path.push(target);
        next.push(0);
      }
    }
  }
  return null;
}

/**
 * The jobs in an order where each comes after all it depends on, otherwise in the order given
 * (Kahn's algorithm: those ready at first in file order, then each as it becomes ready). The graph
 * must have no cycle.
 */
export function topologicalOrder<T extends { name: string; dependsOn: readonly { name: string }[] }>(
  jobs: readonly T[],
): T[] {
  const waitingOn = jobs.map((job) => new Set(job.dependsOn.map((edge) => edge.name)).size);
  const dependants = new Map<string, number[]>();
  jobs.forEach((job, index) => {
    for (const name of new Set(job.dependsOn.map((edge) => edge.name))) {
      const list = dependants.get(name);
      if (list) list.push(index);
      else dependants.set(name, [index]);
    }
  });
  const ready: number[] = [];
  waitingOn.forEach((count, index) => {
    if (count === 0) ready.push(index);
  });
  const order: T[] = [];
  let cursor = 0;
  while (cursor < ready.length) {
    const index = ready[cursor++];
    const job = jobs[index];
    order.push(job);
    for (const dependant of dependants.get(job.name) ?? []) {
      waitingOn[dependant]--;
      if (waitingOn[dependant] === 0) ready.push(dependant);
    }
  }
  if (order.length !== jobs.length) {
    const left = jobs.filter((job) => !order.includes(job)).map((job) => job.name);
    throw new Error(`topologicalOrder: a cycle among ${left.join(", ")}`);
  }
  return order;
}

/** The job file of a workflow's job with its dependsOn naming job ids instead of names. */
export function withJobIds(job: WorkflowJobFile, ids: ReadonlyMap<string, string>): JobSpec {
  const dependsOn = job.dependsOn.map((edge) => {
    const id = ids.get(edge.name);
    if (id === undefined) throw new Error(`withJobIds: no id for ${edge.name}`);
    if (edge.when === "succeeded" && !edge.sameTasks) return id;
    return edge.sameTasks
      ? { job: id, when: edge.when, tasks: "same" as const }
      : { job: id, when: edge.when };
  });
  return { ...job.spec, name: job.spec.name ?? job.name, dependsOn };
}

/**
 * A workflow's state from its jobs' (undefined: a job removed since, counted as ended): while any
 * job has not ended, `running` if one runs, else `pending` if one may start, else `held` if one is
 * held, else `waiting`; once all have ended, `succeeded` if all did, else `failed` if one failed,
 * else `cancelled`.
 */
export function workflowState(states: readonly (JobState | undefined)[]): JobState {
  const live = states.filter((state): state is JobState => state !== undefined && !isEndedState(state));
  if (live.length > 0) {
    for (const state of ["running", "pending", "held"] as const) if (live.includes(state)) return state;
    return "waiting";
  }
  if (states.every((state) => state === "succeeded")) return "succeeded";
  return states.includes("failed") ? "failed" : "cancelled";
}

import { type Command, InvalidArgumentError } from "commander";
import type { Job } from "../../common/api/jobs.ts";
import type { Workflow } from "../../common/api/workflows.ts";
import { CliError } from "../../common/command-line/cli-error.ts";
import { describe } from "../../common/command-line/commands.ts";
import type { JobUpdate } from "../../common/model/job-update.ts";
import { isWorkflowId } from "../../common/model/workflow-id.ts";
import { ApiClient } from "../client.ts";
import { printJson } from "../format.ts";

interface UpdateOptions {
  priority?: number;
  qos?: string;
  requirements?: string;
  rank?: string;
  memoryMb?: number;
  cpus?: number;
  timeLimit?: number;
  parallel?: number;
  json?: boolean;
}

/** A number as given: whether it is in range is the server's to say, as at submit. */
function numberOf(flag: string, whole: boolean) {
  return (value: string): number => {
    const parsed = value.trim() === "" ? Number.NaN : Number(value);
    if (whole ? !Number.isInteger(parsed) : !Number.isFinite(parsed))
      throw new InvalidArgumentError(`${flag} needs ${whole ? "a whole number" : "a number"}, not ${value}`);
    return parsed;
  };
}

/** The merge patch of the job file the options ask for: "" removes an expression, 0 the time limit. */
export function updateOf(options: UpdateOptions): JobUpdate {
  const update: JobUpdate = {};
  if (options.priority !== undefined) update.priority = options.priority;
  if (options.qos !== undefined) update.qos = options.qos;
  if (options.requirements !== undefined)
    update.requirements = options.requirements.trim() === "" ? null : options.requirements;
  if (options.rank !== undefined) update.rank = options.rank.trim() === "" ? null : options.rank;
  if (options.timeLimit !== undefined)
    update.timeLimitSeconds = options.timeLimit === 0 ? null : options.timeLimit;
  if (options.parallel !== undefined)
    update.array = { parallel: options.parallel === 0 ? null : options.parallel };
  if (options.cpus !== undefined || options.memoryMb !== undefined)
    update.resources = {
      ...(options.cpus !== undefined ? { cpus: options.cpus } : {}),
      ...(options.memoryMb !== undefined ? { memoryMb: options.memoryMb } : {}),
    };
  return update;
}

/** The fields the options name, as the job now has them: `priority 5, requirements host.name == "b"`. */
function newValues(job: Job, options: UpdateOptions): string {
  const { spec } = job;
  const shown = (value: unknown) => (value === undefined || value === null ? "none" : String(value));
  const parts: string[] = [];
  if (options.priority !== undefined) parts.push(`priority ${job.priority}`);
  if (options.qos !== undefined) parts.push(`QoS ${job.qos}`);
  if (options.requirements !== undefined) parts.push(`requirements ${shown(spec.requirements)}`);
  if (options.rank !== undefined) parts.push(`rank ${shown(spec.rank)}`);
  if (options.cpus !== undefined) parts.push(`cpus ${spec.resources.cpus}`);
  if (options.memoryMb !== undefined) parts.push(`memory ${spec.resources.memoryMb} MB`);
  if (options.parallel !== undefined) parts.push(`parallel ${shown(spec.array?.parallel)}`);
  if (options.timeLimit !== undefined)
    parts.push(`time limit ${spec.timeLimitSeconds === undefined ? "none" : `${spec.timeLimitSeconds} s`}`);
  return parts.join(", ");
}

/** update: PATCH /api/v1/jobs/{id} with the fields to change. */
export function registerUpdate(program: Command): void {
  program
    .command("update")
    .description(describe("update"))
    .argument("<id>", "job id, or a workflow's id (flow-N): each of its jobs that can take the change")
    .option(
      "--priority <n>",
      "the job's priority (higher first among the owner's jobs)",
      numberOf("--priority", true),
    )
    .option("--qos <tier>", "the job's QoS tier: one its owner may use (checked as at submit)")
    .option(
      "--requirements <expr>",
      'CEL over host facts a host must satisfy, checked as at submit ("" removes them)',
    )
    .option("--rank <expr>", 'CEL over host facts, higher first, checked as at submit ("" removes it)')
    .option("--memory-mb <m>", "memory one task needs, MB (0: no need)", numberOf("--memory-mb", false))
    .option("--cpus <c>", "slots (cpus) one task takes", numberOf("--cpus", true))
    .option(
      "--time-limit <s>",
      "seconds an attempt may run before it is stopped (0 removes the limit)",
      numberOf("--time-limit", false),
    )
    .option(
      "--parallel <m>",
      "an array: at most M of its tasks run at once, also while they run (0 removes the limit)",
      numberOf("--parallel", true),
    )
    .option("--json", "print the job as JSON")
    .addHelpText(
      "after",
      "\nOnly a job that has not started can be updated (pending, waiting or held): a running or ended one is\n" +
        "refused, naming its state; an array with tasks running takes a new --priority only, for its tasks\n" +
        "not yet started, and a new --parallel at any time until it ends (a lower one stops no task: fewer\n" +
        "start until it is met). The new values are checked as at submit, recorded before the answer, named in\n" +
        "the job's events (steward show), and the job is placed by them from the next scheduling pass.\n" +
        "\nsteward update flow-N applies the change to each job of the workflow in turn, in the workflow's\n" +
        "order, one line per job updated (job 8 (train, pending): priority 5); a job that cannot take it (ended,\n" +
        "running, removed) is left as it is and named on stderr with why. Exit 0 when at least one job was\n" +
        "updated, 1 when none was. --parallel is an array's own: give it to steward update JOB.",
    )
    .action(async (id: string, options: UpdateOptions) => {
      const update = updateOf(options);
      if (Object.keys(update).length === 0)
        throw new CliError(
          "nothing to change: give at least one of --priority, --qos, --requirements, --rank, --memory-mb, --cpus, --time-limit, --parallel",
          2,
        );
      if (isWorkflowId(id)) return updateWorkflow(new ApiClient(), id, update, options);
      const job = await new ApiClient().json<Job>("PATCH", `/api/v1/jobs/${encodeURIComponent(id)}`, {
        json: update,
        // Setting the same values again changes nothing: safe to send again after a lost answer.
        idempotent: true,
      });
      if (options.json) printJson(job);
      else process.stdout.write(`job ${job.id} (${job.state}): ${newValues(job, options)}\n`);
    });
}

/** HTTP answers that refuse one job of a workflow (its state, its values, its limits), not the command. */
const REFUSALS = new Set([400, 403, 409, 429]);

/**
 * `update flow-N`: each job of the workflow updated in turn; the ones refused (ended, running, over
 * a limit) or removed listed on stderr with why. None updated: exit 1.
 */
async function updateWorkflow(
  client: ApiClient,
  id: string,
  update: JobUpdate,
  options: UpdateOptions,
): Promise<void> {
  if (options.parallel !== undefined)
    throw new CliError(
      `--parallel is an array's own: give it to one job (steward update JOB --parallel ${options.parallel}; steward show ${id} lists the jobs)`,
      2,
    );
  const workflow = await client.json<Workflow>("GET", `/api/v1/workflows/${encodeURIComponent(id)}`);
  const updated: { name: string; job: Job }[] = [];
  const refused: { name: string; job: string; reason: string }[] = [];
  for (const member of workflow.graph) {
    const label = `job ${member.job} (${member.name})`;
    if (member.state === null) {
      refused.push({ name: member.name, job: member.job, reason: "removed" });
      process.stderr.write(`not updated: ${label}: removed\n`);
      continue;
    }
    try {
      const job = await client.json<Job>("PATCH", `/api/v1/jobs/${encodeURIComponent(member.job)}`, {
        json: update,
        idempotent: true,
      });
      updated.push({ name: member.name, job });
      if (!options.json)
        process.stdout.write(`job ${job.id} (${member.name}, ${job.state}): ${newValues(job, options)}\n`);
    } catch (error) {
      if (!(error instanceof CliError) || error.status === null || !REFUSALS.has(error.status)) throw error;
      refused.push({ name: member.name, job: member.job, reason: error.message });
      process.stderr.write(`not updated: ${label}: ${error.message}\n`);
    }
  }
  if (options.json) printJson({ workflow: workflow.workflow, updated, refused });
  if (updated.length === 0) throw new CliError(`workflow ${workflow.workflow}: no job updated`, 1);
}

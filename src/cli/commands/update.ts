import { type Command, InvalidArgumentError } from "commander";
import type { Job } from "../../broker/api/schemas.ts";
import type { JobUpdate } from "../../common/model/job-update.ts";
import { ApiClient, CliError } from "../client.ts";
import { printJson } from "../format.ts";
import { describe } from "./index.ts";

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
    .argument("<id>", "job id")
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
        "the job's events (steward show), and the job is placed by them from the next scheduling pass.",
    )
    .action(async (id: string, options: UpdateOptions) => {
      const update = updateOf(options);
      if (Object.keys(update).length === 0)
        throw new CliError(
          "nothing to change: give at least one of --priority, --qos, --requirements, --rank, --memory-mb, --cpus, --time-limit, --parallel",
          2,
        );
      const job = await new ApiClient().json<Job>("PATCH", `/api/v1/jobs/${encodeURIComponent(id)}`, {
        json: update,
        // Setting the same values again changes nothing: safe to send again after a lost answer.
        idempotent: true,
      });
      if (options.json) printJson(job);
      else process.stdout.write(`job ${job.id} (${job.state}): ${newValues(job, options)}\n`);
    });
}

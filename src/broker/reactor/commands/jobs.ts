// The user's requests on jobs, one command each: each runs one handler in the reactor and resolves
// once its changes are durable.

import { dependenciesOf } from "../../../common/model/dependencies.ts";
import type { JobSpec } from "../../../common/model/job-spec.ts";
import { type JobUpdate, updatedFields, updateRefusal } from "../../../common/model/job-update.ts";
import type { JobHead } from "../../../common/model/records.ts";
import type { TaskState } from "../../../common/model/states.ts";
import type { RetryRequest } from "../../../common/model/task-retry.ts";
import type { JobEntry } from "../../state/job-entry.ts";
import { headOf } from "../../state/job-header.ts";
import { CommittedEventsOfJobs } from "../committed-events.ts";
import { ConflictError } from "../errors.ts";
import {
  cancelJob,
  cancelTasks,
  checkTaskIndexes,
  holdJob,
  migrateJob,
  releaseJob,
  removeJob,
} from "../handlers/control.ts";
import { type RetryOutcome, retryJob } from "../handlers/retry.ts";
import { submitJob } from "../handlers/submit.ts";
import { updateJob } from "../handlers/update.ts";
import type { IdBlock } from "../id-block.ts";
import type { JobCommands, JobRead, ReceiveJob, Submission, SubmittedJob } from "../ports.ts";
import type { CommandContext } from "./context.ts";

export function jobCommands(context: CommandContext, jobIds: IdBlock): JobCommands {
  const { reactor, committer, read } = context;
  const committedEvents = new CommittedEventsOfJobs((listener) => reactor.events.on("event", listener));
  /**
   * The task states of `tasks: same` dependencies that left memory with tasks ended in different
   * states: read from the store for the handler, which decides each task from them.
   */
  const sameTaskStates = async (spec: JobSpec): Promise<Map<string, TaskState[]> | undefined> => {
    let loaded: Map<string, TaskState[]> | undefined;
    for (const dependency of dependenciesOf(spec.dependsOn)) {
      const header =
        dependency.sameTasks && read.retired(dependency.job) ? read.header(dependency.job) : undefined;
      if (!header) continue;
      const { succeeded, failed, cancelled } = header.counts;
      if ([succeeded, failed, cancelled].includes(header.taskCount)) continue;
      const stored = await read.storedJob(dependency.job);
      if (!stored) continue;
      loaded ??= new Map();
      loaded.set(
        dependency.job,
        stored.tasks.map((task) => task.state),
      );
    }
    return loaded;
  };
  /**
   * Creates a job; resolves once it is durable, with its events as committed (SubmittedJob). A
   * submit with a key an earlier one of the owner used answers the job that one made, once that is
   * durable too, and `receive` is not called (its request is read past). The key is looked up
   * here, once; the handler only answers the job a submit with the same key made meanwhile (both
   * in flight at once) instead of a second.
   */
  const submit = async (submission: Submission, receive: ReceiveJob): Promise<SubmittedJob> => {
    const { owner, submitKey, dependencyOwner, allowedQos = null } = submission;
    const known = submitKey === null ? undefined : await read.findSubmission(owner, submitKey);
    if (known) {
      await committer.flush();
      return { job: known, events: null };
    }
    // The ids this submit draws stay in flight (id-block.ts) until its job is made or it gives up.
    const drawn: number[] = [];
    const newId = async () => {
      const taken = await jobIds.next();
      drawn.push(taken);
      return String(taken);
    };
    let id: string | undefined;
    let job: JobEntry;
    try {
      const received = await receive(newId);
      const { spec, inputs, inputDigests } = received;
      const made = received.id ?? (await newId());
      id = made;
      const dependencyTasks = await sameTaskStates(spec);
      committedEvents.watch(made);
      job = await reactor.run((step) =>
        submitJob(step, {
          id: made,
          spec,
          owner,
          inputs,
          ...(inputDigests ? { inputDigests } : {}),
          submitKey,
          dependencyOwner,
          dependencyTasks,
          allowedQos,
        }),
      );
    } catch (error) {
      if (id !== undefined) committedEvents.take(id);
      throw error;
    } finally {
      for (const taken of drawn) jobIds.settle(taken);
    }
    const events = committedEvents.take(id);
    if (job.id !== id) {
      await committer.flush();
      return { job, events: null };
    }
    return { job, events };
  };
  return {
    submit,

    /**
     * Cancels a job; one that has ended is answered as it is. Answers the job without its tasks
     * (one that ended and left memory is not read whole from the store for it).
     */
    async cancel(id: string, by?: string): Promise<JobHead> {
      if (read.retired(id)) return read.readJobHead(id);
      return headOf(await reactor.run((step) => cancelJob(step, id, by)));
    },

    /**
     * Cancels some tasks of a job (`cancel ID --tasks LIST`): those not started end cancelled,
     * running ones are stopped; one that has ended (the job's too) is left as it is.
     */
    async cancelTasks(id: string, tasks: readonly number[], by?: string): Promise<JobHead> {
      if (read.retired(id)) {
        const head = await read.readJobHead(id);
        checkTaskIndexes(id, head.header.taskCount, tasks);
        return head;
      }
      return headOf(await reactor.run((step) => cancelTasks(step, id, tasks, by)));
    },

    /**
     * Gives failed or cancelled tasks new attempts (model/task-retry.ts); resolves once durable. A
     * job that ended and left memory is read from the store first and comes back into memory.
     * Admitted as a submit is: `allowedQos` the tiers who asks may use (null: any, an admin).
     */
    async retry(
      id: string,
      request: RetryRequest,
      by = "user",
      allowedQos: readonly string[] | null = null,
    ): Promise<RetryOutcome> {
      const stored = read.retired(id) ? await read.storedJob(id) : null;
      return reactor.run((step) => retryJob(step, { ...request, id, by, stored, allowedQos }));
    },

    /** Holds a job: pending tasks do not start; running attempts are stopped (ended `preempted`, reason `held`). */
    async hold(id: string, by?: string, reason?: string): Promise<JobRead> {
      const ended = read.retired(id) ? read.header(id) : undefined;
      if (ended) throw new ConflictError(`job ${id} is ${ended.state}`);
      return reactor.run((step) => holdJob(step, id, by, reason));
    },

    /** Releases a held job; one that has ended is answered as it is (without its tasks, as cancel). */
    async release(id: string, by?: string): Promise<JobHead> {
      if (read.retired(id)) return read.readJobHead(id);
      return headOf(await reactor.run((step) => releaseJob(step, id, by)));
    },

    /** Stops the job's running attempts with a checkpoint; their tasks restart on another host (or `to`). */
    async migrate(id: string, to: string | null, by?: string): Promise<JobRead> {
      if (read.retired(id)) throw new ConflictError(`job ${id} has no running attempt to migrate`);
      return reactor.run((step) => migrateJob(step, id, to, by));
    },

    /**
     * Changes fields of a job not yet running (an array's priority while some tasks run); resolves
     * once the new job file is durable. One that has ended is refused naming its state.
     */
    async update(
      id: string,
      update: JobUpdate,
      by = "user",
      allowedQos: readonly string[] | null = null,
    ): Promise<JobRead> {
      const ended = read.retired(id) ? read.header(id) : undefined;
      if (ended) {
        const facts = { id, state: ended.state, cancelRequested: false, tasks: ended.taskCount };
        const refusal = updateRefusal({ ...facts, liveTasks: 0, startedTasks: 0 }, updatedFields(update));
        throw new ConflictError(refusal ?? `job ${id} is ${ended.state}`);
      }
      return reactor.run((step) => updateJob(step, { id, update, by, allowedQos }));
    },

    /** Removes a job that has ended, with its records. */
    remove(id: string): Promise<void> {
      return reactor.run((step) => removeJob(step, id));
    },
  };
}

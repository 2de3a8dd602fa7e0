// The API's read model (api/ports.ts ReadModel) over whichever core leads (`read` answers its read
// model, or throws NotLeaderError on a standby): jobs, hosts, explanations and tokens from the
// core's read model, a job's events and the accounting from the store, and what each batch-backed
// pool does for a job explained. Every call asks `read` anew, as the ports of the leading core do.

import type { ReadModel as ApiReadModel } from "../api/ports.ts";
import type { PoolNote } from "../pools/pool-manager.ts";
import type { ReadModel } from "../reactor/read-model.ts";
import type { JobEntry } from "../state/job-entry.ts";
import type { Store } from "../store/store.ts";

export function apiReadModel(
  read: () => ReadModel,
  store: Pick<Store, "accounting" | "events" | "eventsAfter">,
  explainPools: (job: JobEntry) => PoolNote[],
): ApiReadModel {
  return {
    now: () => read().now(),
    watchEvents(onEvent, onProgress) {
      read().events.on("event", onEvent);
      read().events.on("progress", onProgress);
      return () => {
        read().events.off("event", onEvent);
        read().events.off("progress", onProgress);
      };
    },
    token: (id) => read().tokens.get(id),
    listTokens: (kind) => read().tokens.list(kind),
    secretsOf: (owner) => read().secretsOf(owner),
    principalOf: (text, now) => read().tokens.principal(text, now),
    matchToken: (text, kind, now) => read().tokens.match(text, kind, now),
    job: (id) => read().job(id),
    readJob: (id) => read().readJob(id),
    readJobHead: (id) => read().readJobHead(id),
    readTask: (id, index) => read().readTask(id, index),
    readTaskStates: (id) => read().readTaskStates(id),
    header: (id) => read().header(id),
    jobEvents: (id) => store.events(id),
    eventsAfter: (after, limit, jobId) => store.eventsAfter(after, limit, jobId),
    accounting: (query) => store.accounting(query),
    workflow: (id) => read().workflow(id),
    listWorkflows: () => read().listWorkflows(),
    jobOwner: (id) => read().jobOwner(id),
    listJobs: (withRetired) => read().listJobs(withRetired),
    readHosts: () => read().readHosts(),
    hostOf: (name) => read().hostOf(name),
    shares: (viewer) => read().shares(viewer),
    async explainJob(id, viewer) {
      const job = await read().readJob(id);
      return {
        id,
        state: job.record.state,
        ...(await read().explain(id, viewer)),
        // Pools take work that waits: an ended job's explanation has none.
        pools: job.isEnded() ? [] : explainPools(job),
      };
    },
    admitDraft: (spec, owner, allowedQos) => read().admitDraft(spec, owner, allowedQos),
    explainDraft(spec, owner, dependencyOwner, viewer) {
      const { job, explanation } = read().explainDraft(spec, owner, dependencyOwner, viewer);
      return { id: job.id, state: job.record.state, ...explanation, pools: explainPools(job) };
    },
    ranksOn: (host, jobId, taskIndex, number) => read().ranksOn(host, jobId, taskIndex, number),
    liveRanksOn: (host, jobId, taskIndex) => read().liveRanksOn(host, jobId, taskIndex),
    isCurrent: (jobId, taskIndex, number) => read().isCurrent(jobId, taskIndex, number),
    acceptsOutputs: (jobId, taskIndex, number) => read().acceptsOutputs(jobId, taskIndex, number),
    unknownCheckpointObjects: (jobId, taskIndex, shas) =>
      read().unknownCheckpointObjects(jobId, taskIndex, shas),
    restartManifest: (jobId, taskIndex, rank) => read().restartManifest(jobId, taskIndex, rank),
  };
}

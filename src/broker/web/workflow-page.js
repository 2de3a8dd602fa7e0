// A workflow's page: its state, its jobs' graph with their states (followed live), and retrying
// what failed.

import { useCallback, useEffect, useMemo, useState } from "preact/hooks";
import { call, debounce } from "./api.js";
import { Problem, when } from "./common.js";
import { html } from "./html.js";
import { WorkflowGraph } from "./workflow.js";

export function WorkflowPage({ id, live }) {
  const [workflow, setWorkflow] = useState(null);
  const [error, setError] = useState(null);
  const [retryError, setRetryError] = useState(null);
  const load = useCallback(async () => {
    try {
      setWorkflow(await call("GET", `/api/v1/workflows/${id}`));
      setError(null);
    } catch (failure) {
      if (failure.status === 404) setWorkflow(null);
      setError(failure.status === 404 ? `No workflow ${id} (or it is not yours).` : failure.message);
    }
  }, [id]);
  // Its jobs' ids, for the live events that concern them.
  const jobs = useMemo(() => new Set(workflow ? Object.values(workflow.jobs) : []), [workflow]);
  useEffect(() => {
    load();
    const refresh = debounce(load, 300);
    return live.subscribe((event) => jobs.has(event.jobId) && refresh());
  }, [load, live, jobs]);
  if (!workflow)
    return html`<${Problem} error=${error} />${error ? null : html`<p class="muted">Loading workflow ${id}…</p>`}`;
  const retry = async () => {
    try {
      await call("POST", `/api/v1/workflows/${id}/retry`, { json: {} });
      setRetryError(null);
      load();
    } catch (failure) {
      setRetryError(`Retry: ${failure.message}`);
    }
  };
  const rerunnable = workflow.graph.some((job) => job.state === "failed" || job.state === "cancelled");
  return html`<article class="workflow" aria-labelledby="workflow-title">
    <h2 id="workflow-title">Workflow ${workflow.workflow} <span class="muted">${workflow.name ?? ""}</span></h2>
    <${Problem} error=${error} />
    <p class="workflow-state">
      <span class=${`badge state-${workflow.state}`} data-state=${workflow.state}>${workflow.state}</span>${" "}
      owner ${workflow.owner} · ${workflow.graph.length} jobs · submitted ${when(workflow.createdAt)}
    </p>
    <div class="actions" role="group" aria-label="actions">
      <button onClick=${retry} disabled=${!rerunnable} title="rerun the failed and cancelled jobs; keep what succeeded">Retry what failed</button>
      <${Problem} error=${retryError} />
    </div>
    <${WorkflowGraph} graph=${workflow.graph} />
  </article>`;
}

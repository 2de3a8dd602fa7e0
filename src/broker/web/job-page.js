// A job's page: its state and actions, task map, attempt timeline, task detail with its log, job
// file and events; reached by the job's id or by its name.

import { useCallback, useEffect, useMemo, useState } from "preact/hooks";
import { call, debounce, followLog } from "./api.js";
import { bytes, Problem, progressOf, usageCells, when } from "./common.js";
import { html } from "./html.js";
import { TaskMap } from "./taskmap.js";
import { Timeline } from "./timeline.js";
import { toYaml } from "./yaml.js";

/** An array's parameters shown in the job file, at most: the API's job has them all. */
const SHOWN_PARAMS = 20;

/** The job file as shown: a long list of parameters cut to its first ones. */
function shownSpec(spec) {
  const params = spec.array?.params;
  if (!params || params.length <= SHOWN_PARAMS) return spec;
  const more = `... and ${(params.length - SHOWN_PARAMS).toLocaleString()} more`;
  return { ...spec, array: { ...spec.array, params: [...params.slice(0, SHOWN_PARAMS), more] } };
}

/** Above this many tasks a job's page loads the compact task states, not every task. */
const FULL_TASKS_UP_TO = 500;

function Actions({ job, hosts, onDone }) {
  const [error, setError] = useState(null);
  const [target, setTarget] = useState("");
  const act = async (label, path, body) => {
    if (!confirm(`${label} job ${job.id} (${job.name})?`)) return;
    try {
      await call("POST", `/api/v1/jobs/${job.id}/${path}`, { json: body ?? {} });
      setError(null);
      onDone();
    } catch (failure) {
      setError(`${label}: ${failure.message}`);
    }
  };
  const ended = ["succeeded", "failed", "cancelled"].includes(job.state);
  return html`<div class="actions" role="group" aria-label="actions">
    <button onClick=${() => act("Cancel", "cancel")} disabled=${ended}>Cancel</button>
    <button onClick=${() => act("Hold", "hold")} disabled=${ended || job.state === "held"}>Hold</button>
    <button onClick=${() => act("Release", "release")} disabled=${job.state !== "held"}>Release</button>
    <label>to <select value=${target} onChange=${(e) => setTarget(e.target.value)} aria-label="migrate to host">
      <option value="">any other host</option>
      ${hosts.filter((host) => host.state === "ready" && host.connected).map((host) => html`<option value=${host.name}>${host.name}</option>`)}
    </select></label>
    <button onClick=${() => act("Migrate", "migrate", target ? { to: target } : {})} disabled=${job.counts.running === 0}>Migrate</button>
    <${Problem} error=${error} />
  </div>`;
}

/** One task's attempts and log; `refreshedAt` is when the job last changed: its attempts are read again then. */
function TaskDetail({ jobId, index, onClose, refreshedAt }) {
  const [task, setTask] = useState(null);
  const [log, setLog] = useState("");
  const [error, setError] = useState(null);
  // Read again whenever the job changed (refreshedAt): a migration or a retry adds an attempt.
  useEffect(() => {
    let stopped = false;
    call("GET", `/api/v1/jobs/${jobId}/tasks/${index}`).then(
      (t) => !stopped && setTask(t),
      (e) => setError(e.message),
    );
    return () => {
      stopped = true;
    };
  }, [jobId, index, refreshedAt]);
  useEffect(() => {
    let stopped = false;
    setLog("");
    const stop = followLog(jobId, index, (text) => !stopped && setLog((previous) => previous + text));
    return () => {
      stopped = true;
      stop();
    };
  }, [jobId, index]);
  return html`<section class="task-detail" aria-labelledby="task-title">
    <h3 id="task-title">Task ${index} <button class="link" onClick=${onClose} aria-label="close the task">×</button></h3>
    <${Problem} error=${error} />
    ${
      task
        ? html`<p>
        <span class=${`badge state-${task.state}`}>${task.state}</span>
        ${task.progress ? html` progress ${(task.progress.fraction * 100).toFixed(0)}%` : null}
        ${task.checkpoint ? html` · checkpoint generation ${task.checkpoint.generation}, ${bytes(task.checkpoint.bytes)}, ${when(task.checkpoint.at)}` : " · no checkpoint"}
      </p>
      <table class="attempts">
        <thead><tr><th scope="col">#</th><th scope="col">Host</th><th scope="col">State</th><th scope="col">Outcome</th><th scope="col">Reason</th><th scope="col">Exit</th><th scope="col">Started</th><th scope="col">Ended</th><th scope="col" title="CPU time, user + system">CPU</th><th scope="col">Peak memory</th><th scope="col">Wall</th></tr></thead>
        <tbody>${task.attempts.map(
          (a) =>
            html`<tr><td>${a.number}${a.restarted ? " ↺" : ""}</td><td>${a.host}</td><td>${a.state}</td><td>${a.outcome ?? ""}</td><td>${a.reason ?? ""}</td><td>${a.exitCode ?? ""}</td><td>${when(a.startedAt)}</td><td>${when(a.endedAt)}</td>${usageCells(a.usage).map((cell) => html`<td class="usage">${cell}</td>`)}</tr>`,
        )}</tbody>
      </table>`
        : null
    }
    <h4>Log (stdout, followed)</h4>
    <pre class="log" aria-live="off">${log || "(nothing yet)"}</pre>
  </section>`;
}

/**
 * `#/jobs/X`: the job whose id is X, or else the latest job named X (the others of that name are
 * listed above it); a name with `*` or `?` is a pattern, as `steward ps --name` takes it.
 */
export function JobRoute({ id, live }) {
  const byId = /^\d+$/.test(id);
  const [named, setNamed] = useState(byId ? { id, others: [] } : null);
  const [error, setError] = useState(null);
  useEffect(() => {
    if (byId) return;
    let stopped = false;
    call("GET", `/api/v1/jobs?all=1&name=${encodeURIComponent(id)}`).then(
      (jobs) => {
        if (stopped) return;
        if (jobs.length === 0)
          return setError(`No job ${id}: no job has that id or name (or it is not yours).`);
        // In id order: the last is the latest.
        const latest = jobs[jobs.length - 1];
        setNamed({ id: latest.id, others: jobs.slice(0, -1).reverse() });
      },
      (failure) => !stopped && setError(failure.message),
    );
    return () => {
      stopped = true;
    };
  }, [id, byId]);
  if (error) return html`<${Problem} error=${error} />`;
  if (!named) return html`<p class="muted">Looking for job ${id}…</p>`;
  return html`${
    named.others.length > 0
      ? html`<p class="name-matches">${named.others.length + 1} jobs match ${id}; this is the latest (job ${named.id}). Others:
        ${named.others.map((job, index) => html`${index ? ", " : " "}<a href=${`#/jobs/${job.id}`}>job ${job.id}</a> <span class=${`state-${job.state}`}>${job.state}</span>`)}</p>`
      : null
  }<${JobPage} key=${named.id} id=${named.id} live=${live} />`;
}

function JobPage({ id, live }) {
  const [job, setJob] = useState(null);
  const [states, setStates] = useState(null);
  const [arrivedAt, setArrivedAt] = useState(null);
  const [hosts, setHosts] = useState([]);
  const [error, setError] = useState(null);
  const [task, setTask] = useState(null);
  const load = useCallback(async () => {
    try {
      const head = await call("GET", `/api/v1/jobs/${id}?tasks=0`);
      // Small jobs come whole (the timeline needs every attempt); an array's map always reads the
      // compact states, the one place that says which letter is which state.
      const full = head.taskCount <= FULL_TASKS_UP_TO ? await call("GET", `/api/v1/jobs/${id}`) : head;
      const compact = head.taskCount > 1 ? await call("GET", `/api/v1/jobs/${id}/task-states`) : null;
      setArrivedAt(performance.now());
      setJob(full);
      setStates(compact?.states ?? null);
      setError(null);
    } catch (failure) {
      // A job gone (removed) is not left on the page under the error.
      if (failure.status === 404) setJob(null);
      setError(failure.status === 404 ? `No job ${id} (or it is not yours).` : failure.message);
    }
  }, [id]);
  useEffect(() => {
    load();
    call("GET", "/api/v1/hosts").then(setHosts, () => {});
    const refresh = debounce(load, 300);
    return live.subscribe((event) => event.jobId === id && refresh());
    // (A big array's page reads 100 kB of task states per refresh: at most one every 300 ms.)
  }, [id, load, live]);
  const timelineTasks = useMemo(() => {
    if (!job) return [];
    if (job.tasks) return job.tasks;
    return [];
  }, [job]);
  if (!job)
    return html`<${Problem} error=${error} />${error ? null : html`<p class="muted">Loading job ${id}…</p>`}`;
  const { done, total } = progressOf(job);
  return html`<article class="job" aria-labelledby="job-title">
    <h2 id="job-title">Job ${job.id} <span class="muted">${job.name}</span></h2>
    <${Problem} error=${error} />
    <p class="job-state">
      <span class=${`badge state-${job.state}`} data-state=${job.state}>${job.state}</span>
      owner ${job.owner} · QoS ${job.qos} · priority ${job.priority} · submitted ${when(job.createdAt)}${job.endedAt ? ` · ended ${when(job.endedAt)}` : ""}
      ${job.workflow ? html` · <a class="workflow-link" href=${`#/workflows/${job.workflow.id}`}>workflow ${job.workflow.id}</a> (as ${job.workflow.name})` : null}
      · <progress max=${total} value=${done} aria-label=${`${done} of ${total} tasks ended`}></progress> ${done}/${total}
    </p>
    <${Actions} job=${job} hosts=${hosts} onDone=${load} />
    ${states ? html`<${TaskMap} states=${states} arrivedAt=${arrivedAt} onOpen=${setTask} />` : null}
    ${job.tasks ? html`<${Timeline} tasks=${timelineTasks} />` : html`<p class="muted">The timeline shows the attempts of a task you open on the map (the job has ${total.toLocaleString()} tasks).</p>`}
    ${task === null && job.tasks?.length === 1 ? html`<${TaskDetail} jobId=${job.id} index=${0} onClose=${() => {}} refreshedAt=${arrivedAt} />` : null}
    ${task !== null ? html`<${TaskDetail} jobId=${job.id} index=${task} onClose=${() => setTask(null)} refreshedAt=${arrivedAt} />` : null}
    <details>
      <summary>Job file</summary>
      <pre class="spec">${toYaml(shownSpec(job.spec))}</pre>
    </details>
    ${
      job.events
        ? html`<section aria-labelledby="events-title"><h3 id="events-title">Events</h3>
      <ol class="events">${[...job.events].reverse().map((e) => html`<li><time>${when(e.at)}</time> <span class="kind">${e.kind}</span> ${e.message}</li>`)}</ol>
    </section>`
        : null
    }
  </article>`;
}

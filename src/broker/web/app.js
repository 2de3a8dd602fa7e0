// The Steward dashboard: jobs (live through the event stream), a job with its task map, attempt
// timeline, events and task detail, a workflow's graph with its jobs' states, hosts and pools,
// actions, and submitting a job file.
// Preact with htm (no build step); every request goes through the public API with the user's token.

import { render } from "preact";
import { useCallback, useEffect, useMemo, useRef, useState } from "preact/hooks";
import { ApiError, call, debounce, followEvents, followLog, savedToken, saveToken } from "./api.js";
import { html } from "./html.js";
import { TaskMap } from "./taskmap.js";
import { Timeline } from "./timeline.js";
import { WorkflowGraph } from "./workflow.js";
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

const JOB_STATES = ["held", "waiting", "pending", "running", "succeeded", "failed", "cancelled"];
/** Above this many tasks a job's page loads the compact task states, not every task. */
const FULL_TASKS_UP_TO = 500;

function useRoute() {
  const [hash, setHash] = useState(location.hash || "#/jobs");
  useEffect(() => {
    const changed = () => setHash(location.hash || "#/jobs");
    addEventListener("hashchange", changed);
    return () => removeEventListener("hashchange", changed);
  }, []);
  return hash.slice(1).split("/").filter(Boolean);
}

function when(iso) {
  return iso ? new Date(iso).toLocaleString() : "";
}

/** An attempt's usage cells: CPU (user + system), peak memory, wall time; "–" where not measured. */
function usageCells(usage) {
  if (!usage) return ["", "", ""];
  const cpu =
    usage.userSeconds === null || usage.systemSeconds === null
      ? "–"
      : `${(usage.userSeconds + usage.systemSeconds).toFixed(2)} s`;
  const memory = usage.peakMemoryMb === null ? "–" : `${usage.peakMemoryMb.toFixed(1)} MB`;
  return [cpu, memory, `${usage.wallSeconds.toFixed(2)} s`];
}

function bytes(n) {
  return n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} kB` : `${(n / 1048576).toFixed(1)} MB`;
}

function Problem({ error }) {
  return error ? html`<p class="problem" role="alert">${error}</p>` : null;
}

// ---- sign-in

function SignIn({ onSignedIn, reason }) {
  const [error, setError] = useState(reason ?? null);
  const [busy, setBusy] = useState(false);
  const submit = async (event) => {
    event.preventDefault();
    const token = new FormData(event.target).get("token").trim();
    setBusy(true);
    try {
      const me = await call("GET", "/api/v1/whoami", { token });
      saveToken(token);
      onSignedIn(me);
    } catch (failure) {
      setError(
        failure instanceof ApiError && failure.status === 401
          ? `The server refused this token: ${failure.message}.`
          : `Could not reach the server: ${failure.message}`,
      );
    } finally {
      setBusy(false);
    }
  };
  return html`<main class="signin">
    <h1>Steward</h1>
    <form onSubmit=${submit}>
      <label for="token">Token</label>
      <input id="token" name="token" type="password" autocomplete="off" required autofocus
        aria-describedby="token-help" aria-invalid=${error ? "true" : "false"} />
      <p id="token-help" class="muted">The same bearer token the CLI uses (STEWARD_TOKEN, or <code>steward token create</code>). It is kept in this tab only.</p>
      <button type="submit" disabled=${busy}>Sign in</button>
      <${Problem} error=${error} />
    </form>
  </main>`;
}

// ---- jobs

function progressOf(job) {
  const done = job.counts.succeeded + job.counts.failed + job.counts.cancelled;
  return { done, total: job.taskCount };
}

function Jobs({ live }) {
  const [jobs, setJobs] = useState(null);
  const [error, setError] = useState(null);
  const [state, setState] = useState("");
  const [owner, setOwner] = useState("");
  const [search, setSearch] = useState("");
  const load = useCallback(async () => {
    try {
      setJobs(await call("GET", "/api/v1/jobs?all=1"));
      setError(null);
    } catch (failure) {
      setError(failure.message);
    }
  }, []);
  useEffect(() => {
    load();
    const refresh = debounce(load, 250);
    return live.subscribe((event) => {
      // Counts move the bars at once; a stored event (a new job, a state) reads the list again.
      if (event.type !== "progress") return refresh();
      setJobs((current) =>
        current?.map((job) =>
          job.id === event.jobId ? { ...job, state: event.state, counts: event.counts } : job,
        ),
      );
    });
  }, [load, live]);
  if (!jobs) return html`<${Problem} error=${error} /><p class="muted">Loading jobs…</p>`;
  const counts = {};
  for (const job of jobs) counts[job.state] = (counts[job.state] ?? 0) + 1;
  const shown = jobs
    .filter(
      (job) =>
        !state ||
        job.state === state ||
        (state === "active" && !["succeeded", "failed", "cancelled"].includes(job.state)),
    )
    .filter((job) => !owner || job.owner === owner)
    .filter((job) => !search || job.name.toLowerCase().includes(search.toLowerCase()))
    .reverse();
  const owners = [...new Set(jobs.map((job) => job.owner))].sort();
  return html`<section aria-labelledby="jobs-title">
    <h2 id="jobs-title">Jobs</h2>
    <${Problem} error=${error} />
    <ul class="counts" aria-label="jobs by state">
      ${JOB_STATES.map((name) => html`<li class=${`state-${name}`}><span class="count">${counts[name] ?? 0}</span> ${name}</li>`)}
    </ul>
    <div class="filters">
      <label>State <select value=${state} onChange=${(e) => setState(e.target.value)}>
        <option value="">all</option><option value="active">not ended</option>
        ${JOB_STATES.map((name) => html`<option value=${name}>${name}</option>`)}
      </select></label>
      <label>Owner <select value=${owner} onChange=${(e) => setOwner(e.target.value)}>
        <option value="">anyone</option>
        ${owners.map((name) => html`<option value=${name}>${name}</option>`)}
      </select></label>
      <label>Name <input type="search" value=${search} onInput=${(e) => setSearch(e.target.value)} placeholder="search by name" /></label>
    </div>
    <table class="jobs">
      <thead><tr><th scope="col">ID</th><th scope="col">Name</th><th scope="col">Owner</th><th scope="col">State</th><th scope="col">Progress</th><th scope="col">Running</th><th scope="col">Submitted</th></tr></thead>
      <tbody>
        ${shown.map((job) => {
          const { done, total } = progressOf(job);
          return html`<tr data-job=${job.id} class=${`state-${job.state}`}>
            <td><a href=${`#/jobs/${job.id}`}>${job.id}</a></td>
            <td>${job.name}</td>
            <td>${job.owner}</td>
            <td><span class=${`badge state-${job.state}`}>${job.state}</span></td>
            <td><progress max=${total} value=${done} aria-label=${`job ${job.id}: ${done} of ${total} tasks ended`}></progress> <span class="muted">${done}/${total}</span></td>
            <td>${job.counts.running}</td>
            <td>${when(job.createdAt)}</td>
          </tr>`;
        })}
      </tbody>
    </table>
    ${shown.length === 0 ? html`<p class="muted">No jobs${jobs.length ? " match" : " yet"}.</p>` : null}
  </section>`;
}

// ---- one job

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
function JobRoute({ id, live }) {
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

// ---- workflows

function WorkflowPage({ id, live }) {
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

// ---- hosts

function Hosts({ live, me }) {
  const [hosts, setHosts] = useState(null);
  const [pools, setPools] = useState([]);
  const [error, setError] = useState(null);
  const load = useCallback(async () => {
    try {
      const listed = await call("GET", "/api/v1/hosts");
      setHosts(listed.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0)));
      setPools(await call("GET", "/api/v1/pools"));
      setError(null);
    } catch (failure) {
      setError(failure.message);
    }
  }, []);
  useEffect(() => {
    load();
    const refresh = debounce(load, 500);
    const stop = live.subscribe(() => refresh());
    // Heartbeats are not events: the facts are read again every few seconds while the page is open.
    const timer = setInterval(load, 5000);
    return () => {
      stop();
      clearInterval(timer);
    };
  }, [load, live]);
  // Drain, undrain and remove: each after a confirmation, as cancelling a job is.
  const act = async (label, question, method, path) => {
    if (!confirm(question)) return;
    try {
      await call(method, path, method === "POST" ? { json: {} } : undefined);
      load();
    } catch (failure) {
      setError(`${label}: ${failure.message}`);
    }
  };
  const hostPath = (name) => `/api/v1/hosts/${encodeURIComponent(name)}`;
  const drain = (name) =>
    act(
      `Drain ${name}`,
      `Drain host ${name}? It finishes its work and takes no more.`,
      "POST",
      `${hostPath(name)}/drain`,
    );
  const undrain = (name) =>
    act(`Undrain ${name}`, `Undrain host ${name}? It takes work again.`, "POST", `${hostPath(name)}/undrain`);
  const remove = (name) =>
    act(
      `Remove ${name}`,
      `Remove host ${name}? Its host credential is revoked: its agent must join again with a join token.`,
      "DELETE",
      hostPath(name),
    );
  const actions = (host) => {
    if (me.role !== "admin") return null;
    return html`${host.state === "ready" ? html`<button onClick=${() => drain(host.name)}>Drain</button>` : null}
      ${host.state === "draining" ? html`<button onClick=${() => undrain(host.name)}>Undrain</button>` : null}
      ${!host.connected ? html`<button onClick=${() => remove(host.name)}>Remove</button>` : null}`;
  };
  if (!hosts) return html`<${Problem} error=${error} /><p class="muted">Loading hosts…</p>`;
  return html`<section aria-labelledby="hosts-title">
    <h2 id="hosts-title">Hosts</h2>
    <${Problem} error=${error} />
    <table class="hosts">
      <thead><tr><th scope="col">Name</th><th scope="col">Pool</th><th scope="col">State</th><th scope="col">Slots used</th><th scope="col">Load</th><th scope="col">Speed</th><th scope="col">Labels</th><th scope="col">Last heartbeat</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
      <tbody>${hosts.map((host) => {
        const flag = !host.connected ? "disconnected" : host.state !== "ready" ? host.state : "";
        return html`<tr data-host=${host.name} class=${`host-${host.state}${host.connected ? "" : " host-disconnected"}`}>
          <td>${host.name}</td><td>${host.pool}</td>
          <td><span class=${`badge host-${host.state}`}>${host.state}</span>${flag && flag !== host.state ? html` <span class="badge host-lost">${flag}</span>` : null}</td>
          <td><progress max=${host.slots} value=${host.slots - host.slotsFree} aria-label=${`${host.slots - host.slotsFree} of ${host.slots} slots used`}></progress> ${host.slots - host.slotsFree}/${host.slots}</td>
          <td>${host.facts.load1.toFixed(2)}</td><td>${host.facts.speed.toFixed(2)}</td>
          <td>${Object.entries(host.labels)
            .map(([k, v]) => `${k}=${v}`)
            .join(", ")}</td>
          <td>${when(host.lastSeen)}</td>
          <td>${actions(host)}</td>
        </tr>`;
      })}</tbody>
    </table>
    ${hosts.length === 0 ? html`<p class="muted">No hosts have joined.</p>` : null}
    ${
      pools.length
        ? html`<h3>Pools</h3><table class="pools"><thead><tr><th scope="col">Name</th><th scope="col">Driver</th><th scope="col">State</th><th scope="col">Pending</th><th scope="col">Running</th><th scope="col">Reason</th></tr></thead>
      <tbody>${pools.map((pool) => html`<tr><td>${pool.name}</td><td>${pool.driver}</td><td>${pool.state}</td><td>${pool.pilots.pending}</td><td>${pool.pilots.running}</td><td>${pool.reason ?? ""}</td></tr>`)}</tbody></table>`
        : null
    }
  </section>`;
}

// ---- submit

const EXAMPLE = "name: hello\ncommand: echo hello from Steward\n";

/** The offset in `text` of a line and column counted from 1. */
function offsetOf(text, line, column) {
  const lines = text.split("\n");
  const before = lines.slice(0, line - 1).reduce((sum, each) => sum + each.length + 1, 0);
  return Math.min(text.length, before + column - 1);
}

function Submit() {
  const [text, setText] = useState(EXAMPLE);
  const [problem, setProblem] = useState(null);
  const [busy, setBusy] = useState(false);
  const area = useRef(null);
  const submit = async (event) => {
    event.preventDefault();
    setBusy(true);
    try {
      const job = await call("POST", "/api/v1/jobs", { text, type: "application/yaml" });
      setProblem(null);
      location.hash = `#/jobs/${job.id}`;
    } catch (failure) {
      // The server's message as the CLI prints it (`line 2, column 1: comand: unknown key (did
      // you mean command?)`), and the caret put where it points.
      setProblem({ message: failure.message });
      const field = area.current;
      field?.focus();
      if (field && failure.line) {
        const at = offsetOf(text, failure.line, failure.column ?? 1);
        field.setSelectionRange(at, at);
      }
    } finally {
      setBusy(false);
    }
  };
  return html`<section aria-labelledby="submit-title">
    <h2 id="submit-title">Submit a job</h2>
    <form onSubmit=${submit} class="submit">
      <label for="jobfile">Job file (YAML)</label>
      <textarea id="jobfile" ref=${area} rows="14" spellcheck="false" value=${text} onInput=${(e) => setText(e.target.value)}
        aria-invalid=${problem ? "true" : "false"} aria-describedby="jobfile-error"></textarea>
      <div id="jobfile-error" class="field-error" role="alert">
        ${problem ? problem.message : null}
      </div>
      <button type="submit" disabled=${busy}>Submit</button>
    </form>
  </section>`;
}

// ---- the shell

/** One event stream for the whole page; views subscribe to it. */
function useLive(signedIn) {
  const listeners = useRef(new Set());
  const [state, setState] = useState("connecting");
  useEffect(() => {
    if (!signedIn) return;
    const stop = followEvents(
      "",
      (event) => {
        for (const listener of listeners.current) listener(event);
      },
      setState,
    );
    return stop;
  }, [signedIn]);
  return useMemo(
    () => ({
      state,
      subscribe(listener) {
        listeners.current.add(listener);
        return () => listeners.current.delete(listener);
      },
    }),
    [state],
  );
}

function App() {
  const [me, setMe] = useState(undefined);
  const [reason, setReason] = useState(null);
  const route = useRoute();
  useEffect(() => {
    if (!savedToken()) return setMe(null);
    call("GET", "/api/v1/whoami").then(setMe, (failure) => {
      saveToken(null);
      setReason(
        failure.status === 401 ? `The server refused the saved token: ${failure.message}.` : failure.message,
      );
      setMe(null);
    });
  }, []);
  const live = useLive(Boolean(me));
  if (me === undefined) return html`<p class="muted">Loading…</p>`;
  if (me === null) return html`<${SignIn} onSignedIn=${setMe} reason=${reason} />`;
  const [page, id] = route;
  const view =
    page === "jobs" && id
      ? html`<${JobRoute} key=${id} id=${id} live=${live} />`
      : page === "workflows" && id
        ? html`<${WorkflowPage} key=${id} id=${id} live=${live} />`
        : page === "hosts"
          ? html`<${Hosts} live=${live} me=${me} />`
          : page === "submit"
            ? html`<${Submit} />`
            : html`<${Jobs} live=${live} />`;
  return html`<header>
      <nav aria-label="main">
        <strong class="brand">Steward</strong>
        <a href="#/jobs" aria-current=${page === "jobs" ? "page" : null}>Jobs</a>
        <a href="#/hosts" aria-current=${page === "hosts" ? "page" : null}>Hosts</a>
        ${me.role === "reader" ? null : html`<a href="#/submit" aria-current=${page === "submit" ? "page" : null}>Submit</a>`}
        <span class="spacer"></span>
        <span class=${`live live-${live.state === "live" ? "on" : "off"}`} title="the event stream">${live.state === "live" ? "● live" : `○ ${live.state}`}</span>
        <span class="me">${me.user} (${me.role})</span>
        <button class="link" onClick=${() => {
          saveToken(null);
          setMe(null);
        }}>Sign out</button>
      </nav>
    </header>
    <main>${view}</main>`;
}

render(html`<${App} />`, document.getElementById("app"));

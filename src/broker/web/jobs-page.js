// The jobs page: every job with its state and progress, moved live by the event stream, counted by
// state and filtered by state, owner and name.

import { useCallback, useEffect, useState } from "preact/hooks";
import { call, debounce } from "./api.js";
import { Problem, progressOf, when } from "./common.js";
import { html } from "./html.js";

const JOB_STATES = ["held", "waiting", "pending", "running", "succeeded", "failed", "cancelled"];

export function Jobs({ live }) {
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

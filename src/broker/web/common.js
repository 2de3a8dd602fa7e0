// What the dashboard's pages share: dates and sizes as shown, an attempt's usage cells, a job's
// progress, and the line that shows a problem.

import { html } from "./html.js";

export function when(iso) {
  return iso ? new Date(iso).toLocaleString() : "";
}

/** An attempt's usage cells: CPU (user + system), peak memory, wall time; "–" where not measured. */
export function usageCells(usage) {
  if (!usage) return ["", "", ""];
  const cpu =
    usage.userSeconds === null || usage.systemSeconds === null
      ? "–"
      : `${(usage.userSeconds + usage.systemSeconds).toFixed(2)} s`;
  const memory = usage.peakMemoryMb === null ? "–" : `${usage.peakMemoryMb.toFixed(1)} MB`;
  return [cpu, memory, `${usage.wallSeconds.toFixed(2)} s`];
}

export function bytes(n) {
  return n < 1024 ? `${n} B` : n < 1048576 ? `${(n / 1024).toFixed(1)} kB` : `${(n / 1048576).toFixed(1)} MB`;
}

export function Problem({ error }) {
  return error ? html`<p class="problem" role="alert">${error}</p>` : null;
}

export function progressOf(job) {
  const done = job.counts.succeeded + job.counts.failed + job.counts.cancelled;
  return { done, total: job.taskCount };
}

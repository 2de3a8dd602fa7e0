// The attempt timeline: one lane per host, one bar per attempt coloured by its outcome, a diamond
// where a task's newest checkpoint was committed, a ring where an attempt restored a checkpoint,
// and an arrow from an attempt that was migrated or preempted to the attempt that took over.

import { html } from "./html.js";
import { arrowheadDefs } from "./svg.js";

/** Outcome colours and names (the legend and each bar's title carry the names). */
export const OUTCOMES = {
  running: ["#2b6fdc", "running"],
  succeeded: ["#2ea050", "succeeded"],
  failed: ["#d23232", "failed"],
  lost: ["#e08a00", "lost (host gone)"],
  migrated: ["#8a4fd0", "migrated"],
  preempted: ["#c0569a", "preempted"],
  cancelled: ["#6e6e6e", "cancelled"],
  timed_out: ["#9b2d2d", "timed out"],
};
const MOVES = new Set(["migrated", "preempted", "lost"]);

const ROW = 20;
const LEFT = 110;
const WIDTH = 900;

/** Bars, markers and arrows of `tasks` (each with its attempts), laid out on host lanes. */
export function timelineOf(tasks, now) {
  const hosts = [];
  const bars = [];
  let start = Number.POSITIVE_INFINITY;
  let end = 0;
  for (const task of tasks)
    for (const attempt of task.attempts) {
      if (!hosts.includes(attempt.host)) hosts.push(attempt.host);
      const from = Date.parse(attempt.startedAt);
      const to = attempt.endedAt ? Date.parse(attempt.endedAt) : now;
      start = Math.min(start, from);
      end = Math.max(end, to);
      bars.push({ task: task.index, attempt, from, to });
    }
  const arrows = [];
  for (const task of tasks) {
    const attempts = [...task.attempts].sort((a, b) => a.number - b.number);
    for (let i = 0; i + 1 < attempts.length; i++)
      if (MOVES.has(attempts[i].outcome))
        arrows.push({ task: task.index, from: attempts[i], to: attempts[i + 1] });
  }
  const checkpoints = tasks
    .filter((task) => task.checkpoint)
    .map((task) => ({ task: task.index, ...task.checkpoint }));
  // Attempts that overlap on a host (its slots) go on rows of its lane, each in the first row free.
  const rows = {};
  for (const host of hosts) {
    const ends = [];
    for (const bar of bars.filter((each) => each.attempt.host === host).sort((a, b) => a.from - b.from)) {
      let row = ends.findIndex((rowEnd) => rowEnd <= bar.from);
      if (row < 0) row = ends.push(0) - 1;
      ends[row] = bar.to;
      bar.row = row;
    }
    rows[host] = Math.max(1, ends.length);
  }
  return { hosts, rows, bars, arrows, checkpoints, start, end: Math.max(end, start + 1000) };
}

export function Timeline({ tasks, now = Date.now() }) {
  const { hosts, rows, bars, arrows, checkpoints, start, end } = timelineOf(tasks, now);
  if (bars.length === 0) return html`<p class="muted">No attempt yet.</p>`;
  const x = (ms) => LEFT + ((ms - start) / (end - start)) * (WIDTH - LEFT - 10);
  const tops = {};
  let top = 14;
  for (const host of hosts) {
    tops[host] = top;
    top += rows[host] * ROW + 12;
  }
  const y = (host) => tops[host];
  /** The top of a bar's row. */
  const rowY = (bar) => tops[bar.attempt.host] + bar.row * ROW;
  const barOf = (attempt) => bars.find((bar) => bar.attempt === attempt);
  const height = top + 6;
  return html`<section class="timeline" aria-label="attempt timeline">
    <h3>Attempts by host</h3>
    <ul class="legend">
      ${Object.entries(OUTCOMES).map(
        ([_key, [colour, name]]) =>
          html`<li><span class="swatch" style=${`background:${colour}`}></span>${name}</li>`,
      )}
      <li><span class="marker-key">◆</span>checkpoint</li>
      <li><span class="marker-key">○</span>restored</li>
      <li><span class="marker-key">→</span>moved</li>
    </ul>
    <svg width=${WIDTH} height=${height} viewBox=${`0 0 ${WIDTH} ${height}`} role="img" aria-label=${`${bars.length} attempts on ${hosts.length} hosts`}>
      ${arrowheadDefs("arrowhead")}
      ${hosts.map(
        (host) => html`<g class="lane" data-host=${host}>
          <text x="4" y=${y(host) + 14} class="lane-name">${host}</text>
          <line x1=${LEFT} x2=${WIDTH - 10} y1=${y(host) + rows[host] * ROW + 4} y2=${y(host) + rows[host] * ROW + 4} class="lane-line"></line>
        </g>`,
      )}
      ${bars.map((bar) => {
        const { task, attempt, from, to } = bar;
        const outcome = attempt.outcome ?? "running";
        const [colour, name] = OUTCOMES[outcome] ?? ["#999", outcome];
        const title = `task ${task} attempt ${attempt.number} on ${attempt.host}: ${name}${attempt.reason ? ` (${attempt.reason})` : ""}${attempt.exitCode !== null ? `, exit ${attempt.exitCode}` : ""}`;
        return html`<g class=${`bar outcome-${outcome}`} data-task=${task} data-attempt=${attempt.number} data-host=${attempt.host}>
          <title>${title}</title>
          <rect x=${x(from)} y=${rowY(bar) + 2} width=${Math.max(3, x(to) - x(from))} height="16" rx="3" fill=${colour}></rect>
          ${attempt.restarted ? html`<circle class="restored" cx=${x(from) + 4} cy=${rowY(bar) + 10} r="4" fill="white" stroke="#222"><title>restored from a checkpoint</title></circle>` : null}
        </g>`;
      })}
      ${checkpoints.map((point) => {
        const at = Date.parse(point.at);
        const bar = bars.find((each) => each.task === point.task && each.from <= at && at <= each.to + 1000);
        if (!bar) return null;
        return html`<path class="checkpoint" d=${`M ${x(at)} ${rowY(bar) + 4} l 5 6 l -5 6 l -5 -6 z`} fill="#ffd34d" stroke="#333">
          <title>checkpoint generation ${point.generation}, ${point.bytes} bytes, at ${point.at}</title>
        </path>`;
      })}
      ${arrows.map(({ task, from, to }) => {
        const a = barOf(from);
        const b = barOf(to);
        if (!a || !b) return null;
        return html`<path
          class=${`arrow ${from.outcome}`}
          data-task=${task}
          d=${`M ${x(a.to)} ${rowY(a) + 10} L ${x(b.from)} ${rowY(b) + 10}`}
          stroke="#333"
          stroke-width="1.5"
          stroke-dasharray=${from.outcome === "migrated" ? "" : "4 3"}
          fill="none"
          marker-end="url(#arrowhead)"
        ><title>${`task ${task} ${from.outcome} from ${from.host} to ${to.host}`}</title></path>`;
      })}
    </svg>
  </section>`;
}

// A workflow's graph: its jobs in layers (a job one layer right of the deepest job it waits for),
// one box per job coloured by its state, an arrow per edge (dashed for `ended`, dotted for
// `failed`). A layer of more jobs than fit is drawn as its first jobs and one box that counts the
// rest by state, so a fan-out of thousands stays readable.

import { html } from "./html.js";
import { arrowheadDefs } from "./svg.js";

/** State colours, as the timeline's outcomes. */
export const STATE_COLOURS = {
  held: "#b0a000",
  waiting: "#9aa5b1",
  pending: "#c8d1da",
  running: "#2b6fdc",
  succeeded: "#2ea050",
  failed: "#d23232",
  cancelled: "#6e6e6e",
  removed: "#ffffff",
};

const BOX_W = 170;
const BOX_H = 40;
const COL = 230;
const ROW = 52;
/** A layer draws at most this many jobs; the rest are one box counting them by state. */
export const MAX_PER_LAYER = 12;

/**
 * Lays out `graph` (the API's workflow.graph: each job after those it waits for): each job's
 * layer and row, the boxes (jobs, or a layer's rest counted), and the edges between drawn boxes.
 */
export function workflowLayout(graph) {
  const layerOf = new Map();
  for (const job of graph) {
    let layer = 0;
    for (const edge of job.dependsOn) layer = Math.max(layer, (layerOf.get(edge.name) ?? 0) + 1);
    layerOf.set(job.name, layer);
  }
  const layers = [];
  for (const job of graph) {
    const layer = layerOf.get(job.name);
    if (!layers[layer]) layers[layer] = [];
    layers[layer].push(job);
  }
  const boxes = [];
  const at = new Map();
  layers.forEach((jobs, layer) => {
    const shown = jobs.length > MAX_PER_LAYER ? jobs.slice(0, MAX_PER_LAYER - 1) : jobs;
    shown.forEach((job, row) => {
      const box = { kind: "job", job, x: 10 + layer * COL, y: 10 + row * ROW };
      boxes.push(box);
      at.set(job.name, box);
    });
    const rest = jobs.slice(shown.length);
    if (rest.length > 0) {
      const counts = {};
      for (const job of rest) counts[job.state ?? "removed"] = (counts[job.state ?? "removed"] ?? 0) + 1;
      const box = {
        kind: "rest",
        count: rest.length,
        counts,
        x: 10 + layer * COL,
        y: 10 + shown.length * ROW,
      };
      boxes.push(box);
      for (const job of rest) at.set(job.name, box);
    }
  });
  const edges = [];
  const seen = new Set();
  for (const job of graph) {
    const to = at.get(job.name);
    for (const edge of job.dependsOn) {
      const from = at.get(edge.name);
      const key = `${boxes.indexOf(from)}>${boxes.indexOf(to)}>${edge.when}`;
      if (!from || seen.has(key)) continue;
      seen.add(key);
      edges.push({ from, to, when: edge.when, name: `${edge.name} -> ${job.name}` });
    }
  }
  const width = 20 + Math.max(1, layers.length) * COL - (COL - BOX_W);
  const height =
    20 + Math.max(...layers.map((jobs) => Math.min(jobs.length, MAX_PER_LAYER)), 1) * ROW - (ROW - BOX_H);
  return { boxes, edges, width, height };
}

/** A name that fits its box beside the state (the box's title has it whole). */
export const NAME_FITS = 16;
function shortName(name) {
  return name.length > NAME_FITS ? `${name.slice(0, NAME_FITS - 1)}…` : name;
}

function restTitle(box) {
  return `${box.count} more jobs: ${Object.entries(box.counts)
    .map(([state, n]) => `${n} ${state}`)
    .join(", ")}`;
}

export function WorkflowGraph({ graph }) {
  const { boxes, edges, width, height } = workflowLayout(graph);
  return html`<section class="workflow-graph" aria-label="workflow graph">
    <ul class="legend">
      ${Object.entries(STATE_COLOURS)
        .filter(([state]) => state !== "removed")
        .map(
          ([state, colour]) =>
            html`<li><span class="swatch" style=${`background:${colour}`}></span>${state}</li>`,
        )}
      <li>- - - when: ended</li>
      <li>· · · when: failed</li>
    </ul>
    <svg width=${width} height=${height} viewBox=${`0 0 ${width} ${height}`} role="img" aria-label=${`${graph.length} jobs`}>
      ${arrowheadDefs("flow-arrow")}
      ${edges.map(
        (edge) => html`<path
          class=${`edge when-${edge.when}`}
          d=${`M ${edge.from.x + BOX_W} ${edge.from.y + BOX_H / 2} C ${edge.from.x + BOX_W + 30} ${edge.from.y + BOX_H / 2}, ${edge.to.x - 30} ${edge.to.y + BOX_H / 2}, ${edge.to.x} ${edge.to.y + BOX_H / 2}`}
          stroke="#333"
          stroke-width="1.3"
          stroke-dasharray=${edge.when === "ended" ? "6 4" : edge.when === "failed" ? "2 3" : ""}
          fill="none"
          marker-end="url(#flow-arrow)"
        ><title>${edge.name}${edge.when === "succeeded" ? "" : ` (when ${edge.when})`}</title></path>`,
      )}
      ${boxes.map((box) => {
        if (box.kind === "rest")
          return html`<g class="node rest" data-count=${box.count}>
            <title>${restTitle(box)}</title>
            <rect x=${box.x} y=${box.y} width=${BOX_W} height=${BOX_H} rx="5" fill="#f3f5f7" stroke="#333" stroke-dasharray="3 2"></rect>
            <text x=${box.x + 8} y=${box.y + 24}>+ ${box.count.toLocaleString()} more</text>
          </g>`;
        const state = box.job.state ?? "removed";
        const dark = ["running", "succeeded", "failed", "cancelled"].includes(state);
        return html`<a href=${`#/jobs/${box.job.job}`}>
          <g class="node" data-name=${box.job.name} data-job=${box.job.job} data-state=${state}>
            <title>${`${box.job.name}: job ${box.job.job}, ${state}`}</title>
            <rect x=${box.x} y=${box.y} width=${BOX_W} height=${BOX_H} rx="5" fill=${STATE_COLOURS[state] ?? "#999"} stroke="#333"></rect>
            <text x=${box.x + 8} y=${box.y + 17} fill=${dark ? "white" : "#111"} font-weight="bold">${shortName(box.job.name)}</text>
            <text x=${box.x + 8} y=${box.y + 33} fill=${dark ? "white" : "#111"} font-size="11">job ${box.job.job} · ${state}</text>
          </g>
        </a>`;
      })}
    </svg>
  </section>`;
}

// The task map: one cell per task, coloured by state, drawn into an ImageData so that 100,000
// tasks take a few milliseconds. Hover or the arrow keys show a task; click or Enter opens it.

import { useEffect, useRef, useState } from "preact/hooks";
import { html } from "./html.js";

/** Each state's colour (RGB) and name; the legend and the hover text carry the names. */
export const STATE_COLOURS = {
  w: [160, 160, 160, "waiting"],
  h: [120, 120, 200, "held"],
  p: [200, 200, 200, "pending"],
  r: [40, 110, 220, "running"],
  s: [40, 160, 80, "succeeded"],
  f: [210, 50, 50, "failed"],
  c: [110, 110, 110, "cancelled"],
};

const WIDTH = 800;

/** Cell size and layout for `count` tasks on a canvas WIDTH wide. */
export function layout(count) {
  const cell = Math.max(1, Math.min(16, Math.floor(Math.sqrt((WIDTH * 500) / Math.max(1, count)))));
  const columns = Math.floor(WIDTH / cell);
  const rows = Math.max(1, Math.ceil(count / columns));
  return { cell, columns, rows, width: columns * cell, height: rows * cell };
}

/** Draws `states` (one letter per task); returns the milliseconds it took. */
export function drawTaskMap(canvas, states) {
  const started = performance.now();
  const { cell, columns, width, height } = layout(states.length);
  canvas.width = width;
  canvas.height = height;
  const context = canvas.getContext("2d");
  const image = context.createImageData(width, height);
  const pixels = new Uint32Array(image.data.buffer);
  const packed = {};
  for (const [letter, [r, g, b]] of Object.entries(STATE_COLOURS))
    packed[letter] = (255 << 24) | (b << 16) | (g << 8) | r;
  const gap = cell >= 4 ? 1 : 0;
  for (let index = 0; index < states.length; index++) {
    const colour = packed[states[index]] ?? packed.p;
    const x0 = (index % columns) * cell;
    const y0 = Math.floor(index / columns) * cell;
    for (let y = y0; y < y0 + cell - gap; y++) {
      const row = y * width;
      for (let x = x0; x < x0 + cell - gap; x++) pixels[row + x] = colour;
    }
  }
  context.putImageData(image, 0, 0);
  return performance.now() - started;
}

/** `arrivedAt`: when the states came (performance.now()), for the time from data to drawn map. */
export function TaskMap({ states, arrivedAt, onOpen }) {
  const canvas = useRef(null);
  const [at, setAt] = useState(null);
  useEffect(() => {
    if (!canvas.current) return;
    const ms = drawTaskMap(canvas.current, states);
    // The time from the data's arrival to the drawn map, for the tests and the benchmark.
    const drawnAt = performance.now();
    window.stewardTaskMap = {
      count: states.length,
      drawMs: ms,
      sinceArrivalMs: drawnAt - (arrivedAt ?? drawnAt),
    };
  }, [states, arrivedAt]);
  const { cell, columns } = layout(states.length);
  const indexAt = (event) => {
    const box = canvas.current.getBoundingClientRect();
    const x = Math.floor(((event.clientX - box.left) * (canvas.current.width / box.width)) / cell);
    const y = Math.floor(((event.clientY - box.top) * (canvas.current.height / box.height)) / cell);
    const index = y * columns + x;
    return x < columns && index >= 0 && index < states.length ? index : null;
  };
  const key = (event) => {
    const moves = { ArrowRight: 1, ArrowLeft: -1, ArrowDown: columns, ArrowUp: -columns };
    if (event.key in moves) {
      event.preventDefault();
      setAt((current) =>
        Math.min(states.length - 1, Math.max(0, (current ?? -moves[event.key]) + moves[event.key])),
      );
    } else if (event.key === "Enter" && at !== null) onOpen(at);
  };
  const counts = {};
  for (let i = 0; i < states.length; i++) counts[states[i]] = (counts[states[i]] ?? 0) + 1;
  return html`<section class="taskmap" aria-label="task map">
    <h3>Tasks <span class="muted">(${states.length.toLocaleString()})</span></h3>
    <ul class="legend">
      ${Object.entries(STATE_COLOURS).map(
        ([letter, [r, g, b, name]]) =>
          html`<li><span class="swatch" style=${`background: rgb(${r},${g},${b})`}></span>${name} ${counts[letter] ?? 0}</li>`,
      )}
    </ul>
    <canvas
      ref=${canvas}
      tabindex="0"
      role="img"
      aria-label=${`map of ${states.length} tasks; arrow keys move, Enter opens a task`}
      onMouseMove=${(event) => setAt(indexAt(event))}
      onMouseLeave=${() => setAt(null)}
      onClick=${(event) => {
        const index = indexAt(event);
        if (index !== null) onOpen(index);
      }}
      onKeyDown=${key}
    ></canvas>
    <p class="hover" aria-live="polite">
      ${at === null ? "Hover or use the arrow keys to see a task." : `task ${at}: ${STATE_COLOURS[states[at]]?.[3] ?? states[at]}`}
    </p>
  </section>`;
}

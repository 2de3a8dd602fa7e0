// What the dashboard's drawings share.

import { html } from "./html.js";

/** The arrowhead a drawing's lines end with (`marker-end="url(#ID)"`), as the drawing's defs. */
export function arrowheadDefs(id) {
  return html`<defs>
    <marker id=${id} viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">
      <path d="M 0 0 L 10 5 L 0 10 z" fill="#333"></path>
    </marker>
  </defs>`;
}

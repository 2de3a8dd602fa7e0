// The submit page: a job file pasted as YAML, sent to the API; its error is shown under the editor
// with the caret put where it points.

import { useRef, useState } from "preact/hooks";
import { call } from "./api.js";
import { html } from "./html.js";

const EXAMPLE = "name: hello\ncommand: echo hello from Steward\n";

/** The offset in `text` of a line and column counted from 1. */
function offsetOf(text, line, column) {
  const lines = text.split("\n");
  const before = lines.slice(0, line - 1).reduce((sum, each) => sum + each.length + 1, 0);
  return Math.min(text.length, before + column - 1);
}

export function Submit() {
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

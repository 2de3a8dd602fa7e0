// The Steward dashboard's shell: the route (the page named by the location's hash), the one event
// stream, sign-in, the navigation bar and which page is shown. The pages, each a module of its own:
// jobs (live through the event stream), a job with its task map, attempt timeline, events and task
// detail, a workflow's graph with its jobs' states, hosts and pools, actions, and submitting a job
// file.
// Preact with htm (no build step); every request goes through the public API with the user's token.

import { render } from "preact";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { call, followEvents, savedToken, saveToken } from "./api.js";
import { Hosts } from "./hosts-page.js";
import { html } from "./html.js";
import { JobRoute } from "./job-page.js";
import { Jobs } from "./jobs-page.js";
import { SignIn } from "./sign-in.js";
import { Submit } from "./submit-page.js";
import { WorkflowPage } from "./workflow-page.js";

function useRoute() {
  const [hash, setHash] = useState(location.hash || "#/jobs");
  useEffect(() => {
    const changed = () => setHash(location.hash || "#/jobs");
    addEventListener("hashchange", changed);
    return () => removeEventListener("hashchange", changed);
  }, []);
  return hash.slice(1).split("/").filter(Boolean);
}

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

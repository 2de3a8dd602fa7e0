// The hosts page: each host's state, slots, load, speed, labels and last heartbeat, with drain,
// undrain and remove for admins; the pools when there are any.

import { useCallback, useEffect, useState } from "preact/hooks";
import { call, debounce } from "./api.js";
import { Problem, when } from "./common.js";
import { html } from "./html.js";

export function Hosts({ live, me }) {
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

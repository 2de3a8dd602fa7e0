// The sign-in page: the user's bearer token, checked with the server, then kept in this tab.

import { useState } from "preact/hooks";
import { ApiError, call, saveToken } from "./api.js";
import { Problem } from "./common.js";
import { html } from "./html.js";

export function SignIn({ onSignedIn, reason }) {
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

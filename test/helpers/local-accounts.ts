// Real local accounts for the run-as tests: made with useradd as root, removed after. Without
// root, useradd or setpriv, a test file fails under CI and skips with a message elsewhere.

import { execFileSync } from "node:child_process";

/** What the run-as tests lack on this machine, or null. */
export function runAsUnavailable(): string | null {
  if (process.getuid?.() !== 0) return "not root";
  for (const tool of ["useradd", "userdel", "setpriv", "getent", "runuser"])
    try {
      execFileSync("sh", ["-c", `command -v ${tool}`], { stdio: "ignore" });
    } catch {
      return `no ${tool}`;
    }
  return null;
}

/** A new account without a home (any left by an earlier run goes first); `extra`: more useradd flags. */
export function makeAccount(name: string, extra: string[] = []): number {
  removeAccount(name);
  execFileSync("useradd", [
    ...extra,
    "--no-create-home",
    "--home-dir",
    "/nonexistent",
    "--shell",
    "/usr/sbin/nologin",
    name,
  ]);
  return uidOf(name);
}

export function removeAccount(name: string): void {
  execFileSync("sh", ["-c", `userdel ${name} 2>/dev/null; true`]);
}

export function uidOf(name: string): number {
  return Number(execFileSync("id", ["-u", name], { encoding: "utf8" }).trim());
}

/** Submits a job as `owner` (the admin token names the owner); answers its id. */
export async function submitAs(
  server: { url: string; token: string },
  owner: string,
  spec: Record<string, unknown>,
): Promise<string> {
  const response = await fetch(`${server.url}/api/v1/jobs`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${server.token}`,
      "content-type": "application/json",
      "x-steward-user": owner,
    },
    body: JSON.stringify(spec),
  });
  if (response.status !== 201) throw new Error(`submit: HTTP ${response.status} ${await response.text()}`);
  return ((await response.json()) as { id: string }).id;
}

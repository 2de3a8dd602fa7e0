// Real local accounts for the tests about who a process runs as (jobs run as another account,
// Slurm pilots under a pool's `account:`): made with useradd as root, removed after. Without root
// or the tools, a test file fails under CI and skips with a message elsewhere.

import { execFileSync, spawnSync } from "node:child_process";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, test } from "vitest";

export interface LocalAccount {
  name: string;
  uid: number;
  home: string;
}

/** The first of `tools` this machine lacks, or null. */
function missingTool(tools: string[]): string | null {
  for (const tool of tools)
    try {
      execFileSync("sh", ["-c", `command -v ${tool}`], { stdio: "ignore" });
    } catch {
      return `no ${tool}`;
    }
  return null;
}

/** Why these tests cannot make accounts here (not root, no useradd), or null. */
export function accountsUnavailable(): string | null {
  if (process.getuid?.() !== 0) return "not root";
  return missingTool(["useradd", "userdel", "runuser", "getent"]);
}

/** What the run-as tests lack on this machine (accounts, and setpriv), or null. */
export function runAsUnavailable(): string | null {
  return accountsUnavailable() ?? missingTool(["setpriv"]);
}

/**
 * The run-as tests' gate: `body` (a describe block named `title`) where accounts can be made and
 * setpriv runs; else, under CI, a test that fails saying what is missing, and elsewhere a skip with
 * a message naming `what` (the tests skipped).
 */
export function describeRunAs(what: string, title: string, body: () => void): void {
  const unavailable = runAsUnavailable();
  if (unavailable && process.env.CI) {
    test("root, useradd and setpriv are available", () => {
      throw new Error(`the run-as tests need root, useradd and setpriv: ${unavailable}`);
    });
  } else if (unavailable) {
    console.warn(`skipping ${what}: ${unavailable}`);
    test.skip(`run-as: ${unavailable}`, () => {});
  } else describe(title, body);
}

/** A new account named `name` (one left by an earlier run is removed first), with a home of its own under the temp folder. */
export function createAccount(name: string): LocalAccount {
  removeAccount(name);
  const home = join(tmpdir(), `steward-home-${name}`);
  execFileSync("useradd", ["--create-home", "--home-dir", home, "--shell", "/bin/sh", name]);
  return { name, uid: uidOf(name), home };
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

/** Removes the account and the home it was made with, if any (its processes must have ended). */
export function removeAccount(name: string): void {
  execFileSync("sh", ["-c", 'userdel --remove "$1" 2>/dev/null; true', "sh", name]);
}

/**
 * Whether `account` may run `path` (and so Steward from this checkout): not when the checkout lies
 * under a folder only root may pass, as a clone in a 0700 temporary folder does.
 */
export function accountCanRun(account: string, path: string): boolean {
  return spawnSync("runuser", ["-u", account, "--", "test", "-x", path]).status === 0;
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

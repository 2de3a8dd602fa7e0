// A real browser for the dashboard's tests: Debian's Chromium driven by playwright-core. Without
// it the page tests fail under CI (.ci/run installs it) and skip with a message elsewhere.

import { existsSync } from "node:fs";
import { type Browser, chromium } from "playwright-core";
import { test } from "vitest";

const CANDIDATES = [process.env.STEWARD_CHROMIUM, "/usr/bin/chromium", "/usr/bin/chromium-browser"];

/** The Chromium executable, or null. */
export function chromiumPath(): string | null {
  for (const candidate of CANDIDATES) if (candidate && existsSync(candidate)) return candidate;
  return null;
}

export async function launchBrowser(): Promise<Browser> {
  const executablePath = chromiumPath();
  if (!executablePath) throw new Error("no Chromium (apt-get install chromium, or STEWARD_CHROMIUM=PATH)");
  // --no-sandbox: the tests run as root, where Chromium's sandbox refuses to start.
  return chromium.launch({ executablePath, args: ["--no-sandbox", "--disable-gpu"] });
}

/** Defines a file's page tests: without Chromium they fail under CI and skip with a message otherwise. */
export function browserTests(define: () => void): void {
  if (chromiumPath()) {
    define();
    return;
  }
  if (process.env.CI) {
    test("Chromium is available", () => {
      throw new Error("no Chromium for the page tests: apt-get install chromium (.ci/run does)");
    });
    return;
  }
  console.warn("skipping the page tests: no Chromium (apt-get install chromium)");
  test.skip("page tests: no Chromium", () => {});
}

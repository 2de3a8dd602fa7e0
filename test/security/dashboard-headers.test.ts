// The dashboard's responses carry a Content-Security-Policy (scripts of its own origin and its
// import map by hash only; no frame of it elsewhere), X-Frame-Options: DENY and
// X-Content-Type-Options: nosniff. In Chromium the dashboard works under that policy (sign-in, the
// jobs list, a job page with its task map and timeline, a workflow's graph) with no violation
// reported, and a script injected into the page does not run.

import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { browserTests, launchBrowser } from "../helpers/browser.ts";
import { api, cleanup, type StewardProcess, startUp, waitForJobEnd } from "../helpers/steward.ts";

let steward: StewardProcess;

beforeAll(async () => {
  steward = await startUp({ agents: 1, slots: 2 });
}, 60_000);

afterAll(async () => {
  await steward?.stop();
  cleanup(steward?.data ?? "");
});

describe("the dashboard's headers", () => {
  it.each(["/", "/ui/app.js", "/ui/style.css", "/ui/vendor/preact.js", "/ui/no-such-file.js"])(
    "%s",
    async (path) => {
      const response = await fetch(`${steward.url}${path}`);
      await response.arrayBuffer();
      const policy = response.headers.get("content-security-policy") ?? "";
      expect(policy).toContain("default-src 'none'");
      expect(policy).toMatch(/script-src 'self' 'sha256-[A-Za-z0-9+/]+=*'(;|$)/);
      expect(policy).toContain("frame-ancestors 'none'");
      expect(policy).not.toContain("unsafe-inline");
      expect(policy).not.toContain("unsafe-eval");
      expect(response.headers.get("x-frame-options")).toBe("DENY");
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
    },
  );
});

browserTests(() => {
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    browser = await launchBrowser();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on("pageerror", (error) => console.error(`page error: ${error.message}`));
    // Every violation the page reports, from its first script on.
    await page.addInitScript({
      content: `globalThis.violations = [];
document.addEventListener("securitypolicyviolation", (event) =>
  globalThis.violations.push(event.violatedDirective + " " + event.blockedURI + " " + event.sample));`,
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  const violations = () =>
    page.evaluate(() => (globalThis as unknown as { violations: string[] }).violations);

  it("works under its policy: sign-in, a job's task map and timeline, a workflow's graph; nothing violates it", async () => {
    const array = (await api(steward, "POST", "/api/v1/jobs", {
      name: "swept",
      command: "true",
      array: { count: 20 },
    })) as { id: string };
    await waitForJobEnd(steward, array.id);
    const workflow = (await api(steward, "POST", "/api/v1/workflows", {
      name: "pair",
      jobs: { a: { command: "true" }, b: { command: "true", dependsOn: ["a"] } },
    })) as { workflow: string };
    await page.goto(steward.url);
    await page.fill("#token", steward.token);
    await page.click("button[type=submit]");
    await page.waitForSelector("nav >> text=● live");
    await page.goto(`${steward.url}/#/jobs/${array.id}`);
    await page.waitForSelector(".taskmap canvas");
    await page.waitForSelector(".timeline g.bar");
    // The legend's swatches get their colour through the CSSOM, which the policy allows.
    const swatch = await page.evaluate("getComputedStyle(document.querySelector('.swatch')).backgroundColor");
    expect(swatch).not.toBe("rgba(0, 0, 0, 0)");
    await page.goto(`${steward.url}/#/workflows/${workflow.workflow}`);
    await page.waitForSelector("#workflow-title >> text=pair");
    await page.waitForSelector(".workflow-graph g.node[data-name]");
    expect(await violations()).toEqual([]);
  }, 60_000);

  it("a script injected into the page does not run", async () => {
    const ran = await page.evaluate(`(() => {
      const script = document.createElement("script");
      script.textContent = "globalThis.injectedRan = true";
      document.head.append(script);
      return globalThis.injectedRan === true;
    })()`);
    expect(ran).toBe(false);
    expect((await violations()).some((line) => line.startsWith("script-src"))).toBe(true);
  });
});

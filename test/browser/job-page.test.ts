// The dashboard's job page in a real browser against `steward up` on loopback: the task's log
// followed across attempts, a job opened by its name, and the page header's spacing.

import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { browserTests, launchBrowser } from "../helpers/browser.ts";
import {
  api,
  cleanup,
  getJob,
  type StewardProcess,
  startUp,
  waitFor,
  waitForJobEnd,
} from "../helpers/steward.ts";

browserTests(() => {
  let steward: StewardProcess;
  let browser: Browser;
  let page: Page;

  beforeAll(async () => {
    steward = await startUp({ agents: 1, slots: 2 });
    browser = await launchBrowser();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on("pageerror", (error) => console.error(`page error: ${error.message}`));
    await page.goto(steward.url);
    await page.fill("#token", steward.token);
    await page.click("button[type=submit]");
    await page.waitForSelector("nav >> text=● live");
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    await steward?.stop();
    cleanup(steward?.data ?? "");
  });

  async function submit(body: object): Promise<string> {
    return ((await api(steward, "POST", "/api/v1/jobs", body)) as { id: string }).id;
  }

  async function logOf(id: string, attempt: number): Promise<string> {
    const response = await fetch(`${steward.url}/api/v1/jobs/${id}/logs?attempt=${attempt}`, {
      headers: { authorization: `Bearer ${steward.token}` },
    });
    return response.text();
  }

  it("the followed log goes on across a hold and release: both attempts whole, the second after a separator", async () => {
    const id = await submit({
      name: "counting",
      command: ["sh", "-c", "for i in $(seq 1 40); do echo step $i; sleep 0.05; done"],
    });
    await waitFor("it to run", async () => (await getJob(steward, id)).state === "running");
    await page.goto(`${steward.url}/#/jobs/${id}`);
    await expect
      .poll(async () => (await page.textContent("pre.log"))?.includes("step 5\n"), { timeout: 20_000 })
      .toBe(true);
    await api(steward, "POST", `/api/v1/jobs/${id}/hold`, {});
    await waitFor(
      "attempt 1 to end",
      async () => (await getJob(steward, id)).tasks[0].attempts[0]?.state === "ended",
    );
    await api(steward, "POST", `/api/v1/jobs/${id}/release`, {});
    const job = await waitForJobEnd(steward, id);
    const host = job.tasks[0].attempts[1].host;
    const expected = `${await logOf(id, 1)}--- attempt 2 on ${host} ---\n${await logOf(id, 2)}`;
    await expect.poll(() => page.textContent("pre.log"), { timeout: 20_000 }).toBe(expected);
  }, 60_000);

  it("a job opens by its name: the latest of that name, the others listed; an unknown name leaves no stale page", async () => {
    const older = await submit({ name: "sweep", command: "true" });
    const latest = await submit({ name: "sweep", command: "true" });
    const other = await submit({ name: "other", command: "true" });
    await page.goto(`${steward.url}/#/jobs/${other}`);
    await page.waitForSelector("#job-title >> text=other");
    await page.goto(`${steward.url}/#/jobs/sweep`);
    await expect.poll(() => page.textContent("#job-title")).toBe(`Job ${latest} sweep`);
    expect(await page.textContent(".name-matches")).toContain(`this is the latest (job ${latest})`);
    expect(await page.getAttribute(".name-matches a", "href")).toBe(`#/jobs/${older}`);
    // From a job's page to a name nothing has: the error alone, not the last job's page under it.
    await page.goto(`${steward.url}/#/jobs/${other}`);
    await page.waitForSelector("#job-title >> text=other");
    await page.goto(`${steward.url}/#/jobs/no-such-name`);
    await expect
      .poll(() => page.textContent(".problem"))
      .toBe("No job no-such-name: no job has that id or name (or it is not yours).");
    expect(await page.$("#job-title")).toBeNull();
    // A job id that is not there: likewise.
    await page.goto(`${steward.url}/#/jobs/99999`);
    await expect.poll(() => page.textContent(".problem")).toBe("No job 99999 (or it is not yours).");
    expect(await page.$("#job-title")).toBeNull();
  });

  it("the job header's state pill stands apart from the owner after it", async () => {
    const id = await submit({ name: "spaced", command: "true" });
    await waitForJobEnd(steward, id);
    await page.goto(`${steward.url}/#/jobs/${id}`);
    await page.waitForSelector(".job-state .badge[data-state='succeeded']");
    // The gap between the pill's right edge and the first letter of "owner", in CSS pixels.
    const gap = (await page.evaluate(`(() => {
      const badge = document.querySelector(".job-state .badge");
      const text = badge.nextSibling;
      const range = document.createRange();
      const start = text.textContent.indexOf("owner");
      range.setStart(text, start);
      range.setEnd(text, start + 1);
      return range.getBoundingClientRect().left - badge.getBoundingClientRect().right;
    })()`)) as number;
    expect(gap).toBeGreaterThanOrEqual(4);
  });
});

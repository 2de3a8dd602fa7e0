// The dashboard in a real browser (Chromium through playwright-core) against a real server and
// agents: sign-in, the live jobs list, a migration on the timeline and in the task's attempts,
// cancelling from the page, a bad job file, the task map of a 100,000-task array, and draining,
// undraining and removing hosts.

import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import type { Job } from "../../src/common/api/jobs.ts";
import { browserTests, launchBrowser } from "../helpers/browser.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  cli,
  getJob,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
  waitFor,
} from "../helpers/steward.ts";

browserTests(() => {
  let server: StewardProcess & { joinToken: string };
  const agents: AgentProcess[] = [];
  let browser: Browser;
  let page: Page;
  const dir = tempDir("steward-dashboard-");

  beforeAll(async () => {
    server = await startServerProcess();
    for (const name of ["b1", "b2"])
      agents.push(
        await startAgentProcess({ name, slots: 1, servers: [server.url], joinToken: server.joinToken }),
      );
    browser = await launchBrowser();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on("pageerror", (error) => console.error(`page error: ${error.message}`));
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    for (const agent of agents) await agent.crash();
    await server?.stop();
    cleanup(dir, server?.data ?? "", ...agents.map((agent) => agent.work));
  });

  async function submit(body: object): Promise<string> {
    return ((await api(server, "POST", "/api/v1/jobs", body)) as { id: string }).id;
  }

  it("a wrong token gets a clear message; the right one signs in", async () => {
    await page.goto(server.url);
    await page.fill("#token", "not-the-token");
    await page.click("button[type=submit]");
    await expect
      .poll(() => page.textContent(".problem"))
      .toBe("The server refused this token: wrong bearer token.");
    await page.fill("#token", server.token);
    await page.click("button[type=submit]");
    await page.waitForSelector("nav >> text=admin (admin)");
    await page.waitForSelector("nav >> text=● live");
  });

  it("a job submitted through the CLI appears without a reload and its progress bar moves", async () => {
    await page.evaluate(() => {
      (globalThis as unknown as { notReloaded: boolean }).notReloaded = true;
    });
    const file = `${dir}/six.yaml`;
    await import("node:fs").then((fs) =>
      fs.writeFileSync(file, "name: six\ncommand: sleep 1\narray:\n  count: 6\n"),
    );
    const submitted = await cli(server, ["submit", file, "--json"]);
    expect(submitted.code, submitted.stderr).toBe(0);
    const id = (JSON.parse(submitted.stdout) as Job).id;
    const row = `tr[data-job="${id}"] progress`;
    await page.waitForSelector(row, { timeout: 10_000 });
    const seen = new Set<number>();
    await waitFor(
      "the progress bar to reach 6 of 6",
      async () => {
        const value = Number(await page.getAttribute(row, "value"));
        seen.add(value);
        return value === 6;
      },
      30_000,
      50,
    );
    // It moved through values between, not only from nothing to all.
    expect(
      [...seen].some((value) => value > 0 && value < 6),
      `values seen: ${[...seen]}`,
    ).toBe(true);
    expect(await page.evaluate(() => (globalThis as unknown as { notReloaded?: boolean }).notReloaded)).toBe(
      true,
    );
  });

  let moved: string;
  it("a migration from the CLI shows as two attempts on two hosts with an arrow, and in the task's attempts", async () => {
    moved = await submit({ name: "mover", command: "sleep 120" });
    await waitFor(
      "it to run",
      async () => (await getJob(server, moved)).tasks[0].attempts[0]?.state === "running",
      20_000,
    );
    await page.goto(`${server.url}/#/jobs/${moved}`);
    await page.waitForSelector(".timeline g.bar");
    const migrated = await cli(server, ["migrate", moved]);
    expect(migrated.code, migrated.stderr).toBe(0);
    // Live: the page follows the job's events, no reload.
    await page.waitForSelector(".timeline path.arrow.migrated", { state: "attached", timeout: 20_000 });
    const bars = await page.$$eval(".timeline g.bar", (nodes) =>
      nodes.map((node) => ({
        attempt: node.getAttribute("data-attempt"),
        host: node.getAttribute("data-host"),
      })),
    );
    expect(bars.map((bar) => bar.attempt)).toEqual(["1", "2"]);
    expect(new Set(bars.map((bar) => bar.host)).size).toBe(2);
    expect(await page.getAttribute(".timeline g.bar[data-attempt='1']", "class")).toContain(
      "outcome-migrated",
    );
    // The task's table of attempts follows too: the first ended, migrated; the second runs.
    const attemptRows = () =>
      page.$$eval(".task-detail table.attempts tbody tr", (rows) =>
        rows.map((row) => [...row.querySelectorAll("td")].slice(0, 4).map((cell) => cell.textContent)),
      );
    await expect.poll(attemptRows, { timeout: 20_000 }).toEqual([
      ["1", bars[0].host, "ended", "migrated"],
      ["2", bars[1].host, "running", ""],
    ]);
    // The ended attempt shows what it used (CPU, peak memory, wall time); the running one nothing yet.
    const usageRows = await page.$$eval(".task-detail table.attempts tbody tr", (rows) =>
      rows.map((row) => [...row.querySelectorAll("td.usage")].map((cell) => cell.textContent)),
    );
    expect(usageRows[0][2]).toMatch(/^\d+\.\d\d s$/);
    expect(usageRows[0][0]).toMatch(/^(\d+\.\d\d s|–)$/);
    expect(usageRows[1]).toEqual(["", "", ""]);
  });

  it("cancelling from the page (after confirming) ends the job", async () => {
    page.once("dialog", (dialog) => void dialog.accept());
    await page.click(".actions button:text('Cancel')");
    await page.waitForSelector(".job-state .badge[data-state='cancelled']", { timeout: 20_000 });
    expect((await getJob(server, moved)).state).toBe("cancelled");
    const events = (await getJob(server, moved)).events.map((event) => event.message);
    expect(events).toContain("cancel requested by admin");
  });

  it("a bad job file submitted from the page shows the field's error and creates nothing", async () => {
    const before = ((await api(server, "GET", "/api/v1/jobs?all=1")) as unknown[]).length;
    await page.goto(`${server.url}/#/submit`);
    await page.fill("#jobfile", "name: bad\ncommand: true\nbogus: 1\n");
    await page.click("form.submit button[type=submit]");
    await expect.poll(() => page.textContent("#jobfile-error")).toBe("line 3, column 1: bogus: unknown key");
    expect(await page.getAttribute("#jobfile", "aria-invalid")).toBe("true");
    // The message the CLI prints for the same file, and the caret on the key it names.
    await page.fill("#jobfile", "name: bad\ncomand: true\n");
    await page.click("form.submit button[type=submit]");
    await expect
      .poll(() => page.textContent("#jobfile-error"))
      .toBe("line 2, column 1: comand: unknown key (did you mean command?)");
    const caret = await page.$eval(
      "#jobfile",
      (area) => (area as unknown as { selectionStart: number }).selectionStart,
    );
    expect(caret).toBe("name: bad\n".length);
    expect(((await api(server, "GET", "/api/v1/jobs?all=1")) as unknown[]).length).toBe(before);
    // A good one goes to its job's page.
    await page.fill("#jobfile", "name: good\ncommand: echo fine\n");
    await page.click("form.submit button[type=submit]");
    await page.waitForSelector("#job-title >> text=good");
  });

  it("a 100,000-task array's task map is drawn in under 1 s after its data arrives", async () => {
    // Pending for good (no host has that much memory): the map shows 100,000 pending cells.
    const id = await submit({
      name: "big",
      command: "true",
      array: { count: 100_000 },
      requirements: "host.memoryMb > 1e12",
    });
    await page.goto(`${server.url}/#/jobs/${id}`);
    await page.waitForFunction(
      () =>
        (globalThis as unknown as { stewardTaskMap?: { count: number } }).stewardTaskMap?.count === 100_000,
      null,
      {
        timeout: 30_000,
      },
    );
    const figures = await page.evaluate(() => {
      const w = globalThis as unknown as {
        stewardTaskMap: { drawMs: number; sinceArrivalMs: number };
      };
      return {
        drawMs: w.stewardTaskMap.drawMs,
        sinceArrival: w.stewardTaskMap.sinceArrivalMs,
      };
    });
    console.log(
      `task map of 100,000 tasks: drawn in ${figures.drawMs.toFixed(1)} ms, ${figures.sinceArrival.toFixed(1)} ms after the data arrived`,
    );
    expect(figures.sinceArrival).toBeLessThan(1000);
    // Hovering a cell names its task. The map is drawn again when the job's data is read again,
    // so its canvas may be replaced between being found and being hovered: each try finds the
    // canvas that shows now and hovers it afresh.
    const canvas = page.locator(".taskmap canvas");
    await expect
      .poll(
        async () => {
          await canvas.waitFor({ state: "visible", timeout: 10_000 });
          const box = await canvas.boundingBox();
          if (!box) return null;
          await page.mouse.move(0, 0);
          await page.mouse.move(box.x + 1, box.y + 1);
          return page.textContent(".taskmap .hover");
        },
        { timeout: 30_000 },
      )
      .toBe("task 0: pending");
  });
  it("drains, undrains and removes a host from the hosts page, each after a confirmation", async () => {
    const hostState = async (name: string) =>
      ((await api(server, "GET", "/api/v1/hosts")) as { name: string; state: string }[]).find(
        (host) => host.name === name,
      )?.state;
    await page.goto(`${server.url}/#/hosts`);
    const b1 = 'tr[data-host="b1"]';
    await page.waitForSelector(`${b1} button:text('Drain')`);
    // Dismissed, nothing happens.
    page.once("dialog", (dialog) => void dialog.dismiss());
    await page.click(`${b1} button:text('Drain')`);
    expect(await hostState("b1")).toBe("ready");
    page.once("dialog", (dialog) => void dialog.accept());
    await page.click(`${b1} button:text('Drain')`);
    await page.waitForSelector(`${b1} button:text('Undrain')`);
    expect(await hostState("b1")).toBe("draining");
    page.once("dialog", (dialog) => void dialog.accept());
    await page.click(`${b1} button:text('Undrain')`);
    await page.waitForSelector(`${b1} button:text('Drain')`);
    expect(await hostState("b1")).toBe("ready");
    // A connected host offers no Remove; one whose agent is gone does.
    expect(await page.locator(`${b1} button:text('Remove')`).count()).toBe(0);
    const b3 = await startAgentProcess({
      name: "b3",
      slots: 1,
      servers: [server.url],
      joinToken: server.joinToken,
    });
    agents.push(b3);
    await page.waitForSelector('tr[data-host="b3"]', { timeout: 15_000 });
    await b3.crash();
    await page.waitForSelector(`tr[data-host="b3"] button:text('Remove')`, { timeout: 15_000 });
    page.once("dialog", (dialog) => void dialog.accept());
    await page.click(`tr[data-host="b3"] button:text('Remove')`);
    await page.waitForSelector('tr[data-host="b3"]', { state: "detached", timeout: 10_000 });
    expect(await hostState("b3")).toBeUndefined();
  });
});

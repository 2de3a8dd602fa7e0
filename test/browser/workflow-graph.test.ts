// A workflow's page in a real browser (Chromium through playwright-core) against a real server and
// agents: the graph of a diamond drawn in layers with each job's state, changing live as the jobs
// run (no reload), a job's page linking to its workflow, the retry button, and a fan-out of 300
// jobs drawn as its first jobs and one box counting the rest.

import { writeFileSync } from "node:fs";
import type { Browser, Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { browserTests, launchBrowser } from "../helpers/browser.ts";
import {
  type AgentProcess,
  api,
  cleanup,
  cli,
  type StewardProcess,
  startAgentProcess,
  startServerProcess,
  tempDir,
} from "../helpers/steward.ts";

browserTests(() => {
  let server: StewardProcess & { joinToken: string };
  const agents: AgentProcess[] = [];
  let browser: Browser;
  let page: Page;
  const dir = tempDir("steward-workflow-page-");

  beforeAll(async () => {
    server = await startServerProcess();
    for (const name of ["g1", "g2"])
      agents.push(
        await startAgentProcess({ name, slots: 2, servers: [server.url], joinToken: server.joinToken }),
      );
    browser = await launchBrowser();
    page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
    page.on("pageerror", (error) => console.error(`page error: ${error.message}`));
    await page.goto(server.url);
    await page.fill("#token", server.token);
    await page.click("button[type=submit]");
    await page.waitForSelector("nav >> text=● live");
  }, 90_000);

  afterAll(async () => {
    await browser?.close();
    for (const agent of agents) await agent.crash();
    await server?.stop();
    cleanup(dir, server?.data ?? "", ...agents.map((agent) => agent.work));
  });

  const node = (name: string) => `.workflow-graph g.node[data-name="${name}"]`;
  const stateOf = (name: string) => page.getAttribute(node(name), "data-state");

  it("draws a diamond in layers whose states change live; a job's page links to it", async () => {
    const gate = `${dir}/gate`;
    const file = `${dir}/diamond.yaml`;
    writeFileSync(
      file,
      [
        "name: diamond",
        "jobs:",
        "  a: {command: 'true'}",
        `  b: {command: 'while ! test -e ${gate}; do sleep 0.1; done', dependsOn: [a]}`,
        "  c: {command: 'exit 3', dependsOn: [a]}",
        "  d: {command: 'true', dependsOn: [b, {job: c, when: ended}]}",
        "",
      ].join("\n"),
    );
    const submitted = await cli(server, ["submit", file, "--json"]);
    expect(submitted.code, submitted.stderr).toBe(0);
    const { workflow, jobs } = JSON.parse(submitted.stdout) as {
      workflow: string;
      jobs: Record<string, string>;
    };
    await page.goto(`${server.url}/#/workflows/${workflow}`);
    await page.waitForSelector("#workflow-title >> text=diamond");
    await expect.poll(() => stateOf("b"), { timeout: 20_000 }).toBe("running");
    expect(await stateOf("a")).toBe("succeeded");
    await expect.poll(() => stateOf("c"), { timeout: 20_000 }).toBe("failed");
    expect(await stateOf("d")).toBe("waiting");
    // Layers: a left of b and c, which are left of d; b and c in one column.
    const box = async (name: string) => (await page.locator(`${node(name)} rect`).boundingBox())!;
    const [a, b, c, d] = await Promise.all(["a", "b", "c", "d"].map(box));
    expect(a.x).toBeLessThan(b.x);
    expect(b.x).toBe(c.x);
    expect(c.x).toBeLessThan(d.x);
    expect(await page.locator(".workflow-graph path.edge").count()).toBe(4);
    expect(await page.locator(".workflow-graph path.edge.when-ended").count()).toBe(1);
    await page.evaluate(() => {
      (globalThis as unknown as { notReloaded: boolean }).notReloaded = true;
    });
    writeFileSync(gate, "");
    await expect.poll(() => stateOf("d"), { timeout: 20_000 }).toBe("succeeded");
    expect(await stateOf("b")).toBe("succeeded");
    expect(await page.evaluate(() => (globalThis as unknown as { notReloaded?: boolean }).notReloaded)).toBe(
      true,
    );
    await page.waitForSelector(".workflow-state .badge[data-state='failed']");

    // The retry button reruns c (it failed again: the state shows it back).
    await page.click("button:text('Retry what failed')");
    await expect
      .poll(() => api(server, "GET", `/api/v1/jobs/${jobs.c}`).then((job) => job.tasks[0].attempts.length), {
        timeout: 20_000,
      })
      .toBe(2);

    await page.click(`${node("b")}`);
    await page.waitForSelector(`#job-title >> text=Job ${jobs.b}`);
    await page.click(".workflow-link");
    await page.waitForSelector("#workflow-title >> text=diamond");
  }, 60_000);

  it("draws a fan-out of 300 jobs as its first jobs and one box counting the rest", async () => {
    const middle = Object.fromEntries(
      Array.from({ length: 300 }, (_, i) => [`m${i}`, { command: "true", dependsOn: ["root"] }]),
    );
    const created = (await api(server, "POST", "/api/v1/workflows", {
      name: "fan",
      jobs: {
        root: { command: "true" },
        ...middle,
        sink: { command: "true", dependsOn: Object.keys(middle) },
      },
    })) as { workflow: string };
    await page.goto(`${server.url}/#/workflows/${created.workflow}`);
    await page.waitForSelector("#workflow-title >> text=fan");
    expect(await page.locator(".workflow-graph g.node[data-name]").count()).toBe(13);
    const rest = page.locator(".workflow-graph g.node.rest");
    expect(await rest.getAttribute("data-count")).toBe("289");
    await expect.poll(() => stateOf("sink"), { timeout: 60_000 }).toBe("succeeded");
    expect(await rest.locator("title").textContent()).toBe("289 more jobs: 289 succeeded");
  }, 90_000);
});

// The web dashboard in Chromium (playwright-core): how long the task map of a 100,000-task array
// takes to draw once its data has arrived (median of 3 page loads), how many bytes the page loads
// before its first API call, and screenshots of the jobs list, a job with its timeline (a
// migration among its attempts), an array and the hosts page, written to
// bench/results/screenshots/ for a person to look at.

import { existsSync, mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Benchmark, median, pollUntil, REPOSITORY, round } from "./benchmark.ts";
import { startCluster } from "./steward-cluster.ts";

const RUNS = 3;
const BIG = 100_000;
export const SCREENSHOTS = join(REPOSITORY, "bench", "results", "screenshots");

export const dashboardBenchmark: Benchmark = {
  name: "dashboard",
  description: `the web dashboard in Chromium: a ${BIG.toLocaleString("en")}-task map's draw time, the page's weight, and screenshots`,
  async run({ options, progress }) {
    const { chromium } = await import("playwright-core");
    const browserPath =
      process.env.STEWARD_CHROMIUM ?? ["/usr/bin/chromium", "/usr/bin/chromium-browser"].find(existsSync);
    if (!browserPath) throw new Error("dashboard: no Chromium (apt-get install chromium)");
    const cluster = await startCluster({
      label: "web",
      agents: 3,
      slots: 2,
      serverArgs: ["--heartbeat-seconds", "1", "--host-timeout-seconds", "3"],
      cpuProf: options.cpuProf,
      keep: options.keep,
    });
    const browser = await chromium.launch({
      executablePath: browserPath,
      args: ["--no-sandbox", "--disable-gpu"],
    });
    try {
      const { api } = cluster;
      // Work to look at: an array that runs, a job migrated mid-run, one that fails, a big pending array.
      const array = await api.submit({ name: "render-frames", command: "sleep 2", array: { count: 24 } });
      // Counts to 10, a step a second, resuming from its checkpoint folder: the timeline shows the
      // checkpoint and the restore after the move.
      const moved = await api.submit({
        name: "simulation",
        command:
          'i=$(cat "$STEWARD_CHECKPOINT_DIR/step" 2>/dev/null || echo 0); while [ "$i" -lt 10 ]; do i=$((i+1)); echo "step $i"; echo "$i" > "$STEWARD_CHECKPOINT_DIR/step"; sleep 1; done',
        checkpoint: { intervalSeconds: 1, graceSeconds: 5 },
      });
      await api.submit({
        name: "broken-step",
        command: "echo oops >&2; exit 3",
        retry: { maxAttempts: 2, backoffSeconds: 1 },
      });
      await pollUntil(
        "dashboard: the simulation running",
        async () =>
          (await api.jobDetail(moved)).tasks[0]?.attempts[0]?.state === "running" ? true : undefined,
        { intervalMs: 50, timeoutMs: 30_000 },
      );
      await new Promise((done) => setTimeout(done, 4000));
      await api.control(moved, "migrate");
      const big = await api.submit({
        name: "parameter-sweep",
        command: "true",
        array: { count: BIG },
        requirements: "host.memoryMb > 1e12",
      });

      const page = await browser.newPage({ viewport: { width: 1280, height: 900 } });
      const loaded: number[] = [];
      page.on("response", (response) => {
        if (!response.url().includes("/api/")) loaded.push(Number(response.headers()["content-length"] ?? 0));
      });
      await page.goto(cluster.url);
      await page.fill("#token", cluster.adminToken);
      await page.click("button[type=submit]");
      await page.waitForSelector("table.jobs tbody tr");
      const pageBytes = loaded.reduce((sum, bytes) => sum + bytes, 0);
      const pageFiles = loaded.length;
      progress(`dashboard: the page loads ${pageBytes} bytes before its data (${pageFiles} files)`);

      const draws: { drawMs: number; sinceArrivalMs: number }[] = [];
      for (let run = 1; run <= RUNS; run++) {
        await page.goto(`${cluster.url}/#/jobs`);
        await page.goto(`${cluster.url}/#/jobs/${big}`);
        await page.waitForFunction(
          (count) =>
            (globalThis as unknown as { stewardTaskMap?: { count: number } }).stewardTaskMap?.count === count,
          BIG,
          { timeout: 30_000 },
        );
        const figures = await page.evaluate(() => {
          const w = globalThis as unknown as {
            stewardTaskMap: { drawMs: number; sinceArrivalMs: number };
          };
          return {
            drawMs: w.stewardTaskMap.drawMs,
            sinceArrivalMs: w.stewardTaskMap.sinceArrivalMs,
          };
        });
        draws.push(figures);
        await page.reload();
      }
      const drawMs = round(median(draws.map((d) => d.drawMs)), 1);
      const sinceArrivalMs = round(median(draws.map((d) => d.sinceArrivalMs)), 1);
      progress(
        `dashboard: task map of ${BIG} tasks drawn in ${drawMs} ms, ${sinceArrivalMs} ms after its data arrived (median of ${RUNS})`,
      );

      // Screenshots once the array and the moved job have ended.
      await pollUntil(
        "dashboard: the array and the moved job ended",
        async () => {
          const [a, m] = await Promise.all([api.job(array), api.job(moved)]);
          return a.state === "succeeded" && m.state === "succeeded" ? true : undefined;
        },
        { intervalMs: 250, timeoutMs: 120_000 },
      );
      mkdirSync(SCREENSHOTS, { recursive: true });
      const shots: Record<string, string> = {};
      const shoot = async (name: string, hash: string, ready: string) => {
        await page.goto(`${cluster.url}/${hash}`);
        await page.waitForSelector(ready, { state: "attached" });
        await page.waitForTimeout(500);
        const path = join(SCREENSHOTS, `${name}.png`);
        await page.screenshot({ path, fullPage: true });
        shots[name] = path.slice(REPOSITORY.length + 1);
      };
      await shoot("jobs", "#/jobs", "table.jobs tbody tr");
      await shoot("job-timeline", `#/jobs/${moved}`, ".timeline path.arrow");
      await shoot("array", `#/jobs/${array}`, ".timeline g.bar");
      // A draining host, to show how it stands out.
      await api.request("POST", `/api/v1/hosts/${cluster.agents[2].name}/drain`, {});
      await shoot("hosts", "#/hosts", "table.hosts tbody tr.host-draining");
      progress(`dashboard: screenshots in ${Object.values(shots).join(", ")}`);
      return {
        dashboard: {
          taskMap100k: { drawMs, sinceArrivalMs, runs: draws.map((d) => round(d.drawMs, 1)) },
          pageBytes,
          pageFiles,
          screenshots: shots,
        },
      };
    } finally {
      await browser.close();
      await cluster.stop();
    }
  },
};

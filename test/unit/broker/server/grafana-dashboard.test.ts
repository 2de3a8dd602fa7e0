// deploy/grafana/steward.json, the Grafana dashboard over the brokers' /metrics: valid JSON with
// panels, every query on the Prometheus data source variable, and every series, label and template
// variable its expressions name really there: the series and their labels as the broker's source
// registers them (checked against a started registry of JobMetrics and StoreMetrics), so that a
// renamed series fails here rather than leaving an empty panel.

import { readdirSync, readFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { JobMetrics } from "../../../../src/broker/server/job-metrics.ts";
import { StoreMetrics } from "../../../../src/broker/server/store-metrics.ts";

const ROOT = resolve(import.meta.dirname, "../../../..");
// biome-ignore lint/suspicious/noTemplateCurlyInString: Grafana's variable, as the JSON model writes it
const DATASOURCE = { type: "prometheus", uid: "${DS_PROMETHEUS}" };

interface Target {
  refId: string;
  expr: string;
  datasource: unknown;
}
interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: unknown;
  gridPos: { h: number; w: number; x: number; y: number };
  targets?: Target[];
}
interface Variable {
  name: string;
  type: string;
  query: string | { query: string };
  datasource?: unknown;
}
interface Dashboard {
  title: string;
  uid: string;
  panels: Panel[];
  templating: { list: Variable[] };
  __inputs: { name: string; type: string; pluginId: string }[];
}

/** The series the broker's source registers (prom-client's `name:`, `help:`, `labelNames:`), by name. */
function registeredSeries(): Map<string, string[]> {
  const found = new Map<string, string[]>();
  const src = join(ROOT, "src");
  for (const file of readdirSync(src, { recursive: true, encoding: "utf8" })) {
    if (!file.endsWith(".ts")) continue;
    const text = readFileSync(join(src, file), "utf8");
    const declared =
      /name: "(steward_[a-z0-9_]+)",\s*help: "(?:[^"\\]|\\.)*",\s*(?:labelNames: \[([^\]]*)\])?/g;
    for (const match of text.matchAll(declared))
      found.set(
        match[1],
        [...(match[2] ?? "").matchAll(/"([a-z_]+)"/g)].map((label) => label[1]),
      );
  }
  return found;
}

/** Each series a query may name, with its labels: a histogram's as its _bucket, _sum and _count. */
function queryableSeries(registered: Map<string, string[]>, histograms: Set<string>): Map<string, string[]> {
  const series = new Map<string, string[]>();
  for (const [name, labels] of registered) {
    if (!histograms.has(name)) {
      series.set(name, labels);
      continue;
    }
    series.set(`${name}_bucket`, [...labels, "le"]);
    series.set(`${name}_sum`, labels);
    series.set(`${name}_count`, labels);
  }
  return series;
}

const dashboard = JSON.parse(readFileSync(join(ROOT, "deploy/grafana/steward.json"), "utf8")) as Dashboard;

function brokerMetricsRegistry(): { names: Map<string, string[]>; histograms: Set<string> } {
  const registry = new Registry();
  new JobMetrics(registry);
  new StoreMetrics(registry);
  const names = new Map<string, string[]>();
  const histograms = new Set<string>();
  for (const metric of registry.getMetricsAsArray()) {
    // prom-client's metric objects keep their label names, which its types leave out.
    const { name, labelNames } = metric as unknown as { name: string; labelNames: string[] };
    names.set(name, labelNames);
    if (String(metric.type) === "histogram") histograms.add(name);
  }
  return { names, histograms };
}

const panels = dashboard.panels.filter((panel) => panel.type !== "row");
const expressions = panels.flatMap((panel) =>
  (panel.targets ?? []).map((target) => ({ panel: panel.title, expr: target.expr })),
);

describe("the Grafana dashboard", () => {
  it("is a dashboard with panels, each with its queries on the Prometheus data source variable", () => {
    expect(dashboard.title).toBe("Steward");
    expect(dashboard.uid).toBe("steward");
    expect(panels.length).toBeGreaterThanOrEqual(10);
    expect(new Set(dashboard.panels.map((panel) => panel.id)).size).toBe(dashboard.panels.length);
    for (const panel of panels) {
      expect(panel.datasource, panel.title).toEqual(DATASOURCE);
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets ?? []) expect(target.datasource, panel.title).toEqual(DATASOURCE);
      expect(panel.gridPos.x + panel.gridPos.w, panel.title).toBeLessThanOrEqual(24);
    }
    expect(dashboard.__inputs).toEqual([
      expect.objectContaining({ name: "DS_PROMETHEUS", type: "datasource", pluginId: "prometheus" }),
    ]);
    const variables = Object.fromEntries(dashboard.templating.list.map((each) => [each.name, each]));
    expect(variables.DS_PROMETHEUS).toMatchObject({ type: "datasource", query: "prometheus" });
    expect(variables.pool).toMatchObject({ type: "query", datasource: DATASOURCE });
    expect(variables.owner).toMatchObject({ type: "query", datasource: DATASOURCE });
  });

  it("names only series the broker registers, with their labels, and only its own variables", () => {
    const registered = registeredSeries();
    const { names, histograms } = brokerMetricsRegistry();
    // The source is read right: it finds what a started registry has, labels and all.
    for (const [name, labels] of names) expect(registered.get(name), name).toEqual(labels);
    expect(registered.has("steward_jobs")).toBe(true);
    const series = queryableSeries(registered, histograms);

    const variables = dashboard.templating.list.filter((each) => each.type === "query");
    const queries = [
      ...expressions,
      ...variables.map((each) => ({
        panel: `variable ${each.name}`,
        expr: typeof each.query === "string" ? each.query : each.query.query,
      })),
    ];
    for (const { panel, expr } of queries) {
      const named = [...expr.matchAll(/\b(steward_[a-z0-9_]+)\b/g)].map((match) => match[1]);
      expect(named.length, `${panel}: ${expr}`).toBeGreaterThan(0);
      for (const name of named) expect(series.has(name), `${panel}: ${name} is not a series`).toBe(true);
      const labels = new Set(named.flatMap((name) => series.get(name) ?? []));
      // Labels in selectors, in `by (...)` and in label_values(series, label).
      for (const selector of expr.matchAll(/(steward_[a-z0-9_]+)\{([^}]*)\}/g))
        for (const matcher of selector[2].matchAll(/([a-zA-Z_]+)\s*(?:=~|!~|!=|=)/g))
          expect(series.get(selector[1]), `${panel}: ${selector[1]} has no label ${matcher[1]}`).toContain(
            matcher[1],
          );
      for (const grouping of expr.matchAll(/\bby \(([^)]*)\)/g))
        for (const label of grouping[1].split(",").map((each) => each.trim()))
          expect(labels.has(label), `${panel}: no label ${label} in ${expr}`).toBe(true);
      for (const values of expr.matchAll(/label_values\((steward_[a-z0-9_]+), ([a-z_]+)\)/g))
        expect(series.get(values[1]), `${panel}: ${values[1]} has no label ${values[2]}`).toContain(
          values[2],
        );
      for (const variable of expr.matchAll(/\$\{?(\w+)/g))
        expect(["pool", "owner", "__rate_interval"], `${panel}: $${variable[1]}`).toContain(variable[1]);
    }
  });

  it("shows every series of the work", () => {
    const named = new Set(
      expressions.flatMap(({ expr }) => [...expr.matchAll(/\bsteward_[a-z0-9_]+/g)].map(String)),
    );
    for (const name of [
      "steward_queue_wait_seconds_bucket",
      "steward_attempts_ended_total",
      "steward_preemptions_total",
      "steward_migrations_total",
      "steward_oom_kills_total",
      "steward_slots",
      "steward_gpus",
      "steward_owner_slots_used",
      "steward_owner_gpus_used",
      "steward_jobs",
      "steward_hosts",
    ])
      expect(named.has(name), name).toBe(true);
    expect(
      expressions.some(({ expr }) => /histogram_quantile\(0\.9, sum by \(le\) \(rate\(/.test(expr)),
    ).toBe(true);
  });
});

/**
 * The Grafana dashboard and the Prometheus alert rules speak about metrics that exist: every PromQL
 * expression parses (Prometheus' own lezer grammar, @prometheus-io/lezer-promql), every metric it names
 * is exposed by the service (read from a real scrape of a running app, histogram suffixes included), and
 * every label it selects on is one that metric carries. The alert file has the rules an operator pages
 * on, each with a severity, a summary and a description; Prometheus' config loads the rules and scrapes
 * the ports the roles serve.
 */
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { SyntaxNode } from '@lezer/common';
import { parser } from '@prometheus-io/lezer-promql';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { buildApp } from '../api/app.ts';
import { createLogger } from '../log.ts';
import { metricsRegistry } from '../metrics/registry.ts';
import { REPO_ROOT } from './harness/child.ts';
import { parseExposition } from './harness/prometheus.ts';

const DEPLOY = path.join(REPO_ROOT, 'deploy');
/** Labels Prometheus itself attaches to every scraped series, and its own synthetic metric. */
const TARGET_LABELS = new Set(['job', 'instance']);
const PROMETHEUS_METRICS = new Map<string, Set<string>>([['up', new Set()]]);

interface Reference {
  metric: string;
  labels: string[];
}

/** Parses one expression; throws on a syntax error; returns the metrics it selects and the labels it matches on. */
function referencesOf(expression: string): Reference[] {
  // Grafana's variables are not PromQL: stand-ins of the same shape.
  const promql = expression.replace(/\$__\w+/g, '5m').replace(/\$\{?\w+\}?/g, 'x');
  const tree = parser.parse(promql);
  const references: Reference[] = [];
  let error: string | null = null;
  tree.iterate({
    enter(node) {
      if (node.type.isError) error ??= `syntax error at ${node.from} in: ${promql}`;
      if (node.name !== 'VectorSelector') return;
      const selector: SyntaxNode = node.node;
      const identifier = selector.getChild('Identifier');
      const labels: string[] = [];
      const matchers = selector.getChild('LabelMatchers');
      if (matchers) {
        const cursor = matchers.cursor();
        cursor.iterate((inner) => {
          if (inner.name === 'LabelName') labels.push(promql.slice(inner.from, inner.to));
        });
      }
      if (identifier) references.push({ metric: promql.slice(identifier.from, identifier.to), labels });
    },
  });
  if (error) throw new Error(error);
  return references;
}

/** Every metric a running app exposes (a probe-only app: the HTTP histogram plus the shared registry), with its label names. */
async function exposedMetrics(): Promise<Map<string, { type: string; labels: Set<string> }>> {
  const app = await buildApp({
    log: createLogger('silent'),
    storeAlive: async () => true,
    readiness: () => ({ ready: true, detail: {} }),
  });
  try {
    await app.inject({ method: 'GET', url: '/healthz' });
    const scraped = parseExposition((await app.inject({ method: 'GET', url: '/metrics' })).body);
    const metrics = new Map<string, { type: string; labels: Set<string> }>();
    for (const [name, type] of scraped.types) metrics.set(name, { type, labels: new Set() });
    // Label names: from the definitions (series may not exist yet), and from the samples of the scrape.
    for (const metric of metricsRegistry.getMetricsAsArray()) {
      for (const label of (metric as unknown as { labelNames: string[] }).labelNames)
        metrics.get(metric.name)?.labels.add(label);
    }
    for (const sample of scraped.samples) {
      const family = [...metrics.keys()].find(
        (name) =>
          sample.name === name ||
          (sample.name.startsWith(name) && /^_(bucket|count|sum)$/.test(sample.name.slice(name.length))),
      );
      if (family) for (const label of Object.keys(sample.labels)) metrics.get(family)!.labels.add(label);
    }
    return metrics;
  } finally {
    await app.close();
  }
}

function checkReferences(
  source: string,
  expressions: string[],
  metrics: Map<string, { type: string; labels: Set<string> }>,
): Set<string> {
  const used = new Set<string>();
  for (const expression of expressions) {
    for (const { metric, labels } of referencesOf(expression)) {
      let family = metrics.get(metric);
      let allowed = family?.labels;
      if (!family) {
        const suffix = /_(bucket|count|sum)$/.exec(metric);
        const base = suffix ? metric.slice(0, -suffix[0].length) : null;
        const baseFamily = base ? metrics.get(base) : undefined;
        if (baseFamily && (baseFamily.type === 'histogram' || baseFamily.type === 'summary')) {
          family = baseFamily;
          allowed = new Set([...baseFamily.labels, ...(suffix![1] === 'bucket' ? ['le'] : [])]);
        }
      }
      const builtin = PROMETHEUS_METRICS.get(metric);
      expect(
        family !== undefined || builtin !== undefined,
        `${source}: metric ${metric} is not exposed by the service`,
      ).toBe(true);
      for (const label of labels) {
        expect(
          TARGET_LABELS.has(label) || (allowed ?? builtin)!.has(label),
          `${source}: ${metric} has no label ${label}`,
        ).toBe(true);
      }
      used.add(metric);
    }
  }
  return used;
}

interface Rule {
  alert?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
}

describe('dashboard and alert rules', () => {
  it('parses every PromQL expression and catches a misspelt metric or label', async () => {
    const metrics = await exposedMetrics();
    expect(() => referencesOf('sum(rate(x[5m])')).toThrow(/syntax error/);
    expect(() => checkReferences('probe', ['rate(trader_analytics_ingest_event_total[5m])'], metrics)).toThrow(
      /not exposed/,
    );
    expect(() =>
      checkReferences('probe', ['trader_analytics_http_request_duration_seconds_count{status="500"}'], metrics),
    ).toThrow(/no label status/);
    expect(
      checkReferences(
        'probe',
        ['sum by (le) (rate(trader_analytics_http_request_duration_seconds_bucket{status_code="500",le="1"}[5m]))'],
        metrics,
      ),
    ).toEqual(new Set(['trader_analytics_http_request_duration_seconds_bucket']));
  });

  it('alerts on what an operator pages on, about metrics the service exposes', async () => {
    const metrics = await exposedMetrics();
    const file = parse(await readFile(path.join(DEPLOY, 'prometheus/alerts.yml'), 'utf8')) as {
      groups: { name: string; rules: Rule[] }[];
    };
    const rules = file.groups.flatMap((group) => group.rules);
    const names = rules.map((rule) => rule.alert);
    expect(new Set(names).size).toBe(names.length);
    expect(names).toEqual(
      expect.arrayContaining([
        'TraderAnalyticsIngestStalled',
        'TraderAnalyticsConsumerLagGrowing',
        'TraderAnalyticsDeadLetters',
        'TraderAnalyticsHigh5xxRate',
        'TraderAnalyticsUpstreamOffline',
      ]),
    );
    for (const rule of rules) {
      expect(rule.alert, JSON.stringify(rule)).toMatch(/^TraderAnalytics[A-Z]\w+$/);
      expect(['critical', 'warning'], rule.alert).toContain(rule.labels?.severity);
      expect(rule.annotations?.summary, rule.alert).toBeTruthy();
      expect(rule.annotations?.description, rule.alert).toBeTruthy();
      if (rule.for !== undefined) expect(rule.for, rule.alert).toMatch(/^\d+[smh]$/);
    }
    const used = checkReferences(
      'alerts.yml',
      rules.map((rule) => rule.expr),
      metrics,
    );
    // The pages name their subjects: dead letters, lag, commits, 5xx, upstream staleness.
    for (const metric of [
      'trader_analytics_dead_letters_total',
      'trader_analytics_ingest_consumer_lag_messages',
      'trader_analytics_ingest_last_commit_timestamp_seconds',
      'trader_analytics_http_request_duration_seconds_count',
      'trader_analytics_upstream_last_success_timestamp_seconds',
    ]) {
      expect(used, metric).toContain(metric);
    }
  });

  it('has a dashboard whose every panel queries exposed metrics', async () => {
    const metrics = await exposedMetrics();
    const dashboard = JSON.parse(
      await readFile(path.join(DEPLOY, 'grafana/dashboards/trader-analytics.json'), 'utf8'),
    ) as {
      uid: string;
      templating: { list: { name: string; type: string }[] };
      panels: {
        id: number;
        type: string;
        title: string;
        gridPos: { x: number; y: number; w: number; h: number };
        targets?: { expr: string }[];
      }[];
    };
    expect(dashboard.uid).toBe('trader-analytics');
    expect(dashboard.templating.list.find((variable) => variable.name === 'datasource')?.type).toBe('datasource');
    const ids = dashboard.panels.map((panel) => panel.id);
    expect(new Set(ids).size).toBe(ids.length);
    const expressions: string[] = [];
    for (const panel of dashboard.panels) {
      expect(panel.gridPos.x + panel.gridPos.w, panel.title).toBeLessThanOrEqual(24);
      if (panel.type === 'row') continue;
      expect(panel.targets?.length ?? 0, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets!) expressions.push(target.expr);
    }
    const used = checkReferences('dashboard', expressions, metrics);
    // Every metric of the service appears on the dashboard (runtime metrics aside).
    const ours = [...metrics.keys()].filter((name) => name.startsWith('trader_analytics_'));
    const shown = new Set([...used].map((name) => name.replace(/_(bucket|count|sum)$/, '')));
    expect(ours.filter((name) => !shown.has(name) && !used.has(name))).toEqual([]);
  });

  it('wires Prometheus to the rules and the roles’ ports, and Grafana to the dashboard', async () => {
    const prometheus = parse(await readFile(path.join(DEPLOY, 'prometheus/prometheus.yml'), 'utf8')) as {
      rule_files: string[];
      scrape_configs: { job_name: string; dns_sd_configs: { names: string[]; port: number }[] }[];
    };
    const compose = parse(await readFile(path.join(DEPLOY, 'compose.yaml'), 'utf8')) as {
      services: Record<string, { volumes?: string[] }>;
    };
    const mounts = new Map(
      compose.services.prometheus!.volumes!.map((volume) => [volume.split(':')[1]!, volume.split(':')[0]!]),
    );
    for (const file of prometheus.rule_files) expect(mounts.get(file), file).toBe('./prometheus/alerts.yml');
    const ports = Object.fromEntries(
      prometheus.scrape_configs.flatMap((job) =>
        job.dns_sd_configs.flatMap((sd) => sd.names.map((name) => [name, sd.port])),
      ),
    );
    expect(ports).toEqual({
      api: 8080,
      live: 8080,
      ingest: 9464,
      simulate: 9464,
      archive: 9464,
      upstream: 9464,
      clob: 9464,
    });

    const provider = parse(
      await readFile(path.join(DEPLOY, 'grafana/provisioning/dashboards/trader-analytics.yaml'), 'utf8'),
    ) as { providers: { options: { path: string } }[] };
    const grafanaMounts = new Map(
      compose.services.grafana!.volumes!.map((volume) => [volume.split(':')[1]!, volume.split(':')[0]!]),
    );
    expect(grafanaMounts.get(provider.providers[0]!.options.path)).toBe('./grafana/dashboards');
  });
});

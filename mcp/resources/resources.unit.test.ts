/**
 * What registerChartResources puts on a server (through a recording stand-in for McpServer's
 * registerResource), and the tools' App `_meta`. The real server, resources/list and resources/read over
 * HTTP, and the Apps in a browser host are in test/charts.integration.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../config.ts';
import { chartApp, chartTemplate } from '../../operations/charts/templates.ts';
import { chartAppToolMeta, registerChartResources, type ResourceRegistry } from './index.ts';

const config = parseConfig({ CHART_SCRIPT_HOST: 'https://scripts.example/uplot' });

interface Registered {
  name: string;
  uri: string;
  metadata: Parameters<ResourceRegistry['registerResource']>[2];
  read: Parameters<ResourceRegistry['registerResource']>[3];
}

function registered(): Registered[] {
  const out: Registered[] = [];
  registerChartResources(
    { registerResource: (name, uri, metadata, read) => out.push({ name, uri, metadata, read }) },
    config,
  );
  return out;
}

describe('chart resources', () => {
  it('two MCP Apps (text/html;profile=mcp-app, no domain in their CSP) and ten templates, names unique', () => {
    const all = registered();
    expect(all.map((entry) => entry.uri)).toEqual([
      'ui://trader-analytics/market-chart.html',
      'ui://trader-analytics/equity-chart.html',
      'chart-template://market/night.html',
      'chart-template://market/day.html',
      'chart-template://market/night.svg',
      'chart-template://market/day.svg',
      'chart-template://market-tape/night.html',
      'chart-template://market-tape/day.html',
      'chart-template://equity/night.html',
      'chart-template://equity/day.html',
      'chart-template://equity/night.svg',
      'chart-template://equity/day.svg',
    ]);
    expect(new Set(all.map((entry) => entry.name)).size).toBe(all.length);
    const noDomain = {
      ui: {
        csp: { connectDomains: [], resourceDomains: [], frameDomains: [], baseUriDomains: [] },
        prefersBorder: true,
      },
    };
    for (const entry of all.slice(0, 2)) {
      expect(entry.metadata.mimeType).toBe('text/html;profile=mcp-app');
      expect(entry.metadata._meta).toEqual(noDomain);
    }
    for (const entry of all.slice(2)) {
      expect(entry.metadata.mimeType).toBe(entry.uri.endsWith('.svg') ? 'image/svg+xml' : 'text/html');
      expect(entry.metadata._meta).toBeUndefined();
    }
  });

  it('reads as one text item: the App document (with its _meta.ui) or the very template get_chart_template returns', () => {
    const all = registered();
    const market = all[0]!.read(new URL(all[0]!.uri));
    expect(market.contents).toEqual([
      {
        uri: 'ui://trader-analytics/market-chart.html',
        mimeType: 'text/html;profile=mcp-app',
        text: chartApp('market'),
        _meta: all[0]!.metadata._meta,
      },
    ]);
    const tapeDay = all.find((entry) => entry.uri === 'chart-template://market-tape/day.html')!;
    expect(tapeDay.read(new URL(tapeDay.uri)).contents).toEqual([
      {
        uri: tapeDay.uri,
        mimeType: 'text/html',
        text: chartTemplate('market-tape', 'html', 'day', 'https://scripts.example/uplot'),
      },
    ]);
    expect(tapeDay.read(new URL(tapeDay.uri)).contents[0]!.text).toContain(
      'https://scripts.example/uplot/uPlot.iife.min.js',
    );
  });

  it("a tool's App _meta: ui.resourceUri and the flat ui/resourceUri, the same URI", () => {
    expect(chartAppToolMeta('market')).toEqual({
      ui: { resourceUri: 'ui://trader-analytics/market-chart.html' },
      'ui/resourceUri': 'ui://trader-analytics/market-chart.html',
    });
    expect(chartAppToolMeta('equity')).toEqual({
      ui: { resourceUri: 'ui://trader-analytics/equity-chart.html' },
      'ui/resourceUri': 'ui://trader-analytics/equity-chart.html',
    });
  });
});

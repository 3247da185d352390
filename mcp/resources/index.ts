/**
 * The MCP resources of the service, all free (no call of the budget: resources/list and resources/read
 * are not tool calls, like tools/list):
 *
 * - the chart templates of `get_chart_template`, one URI per kind × format × theme
 *   (`chart-template://market/night.html`, …), the very document the tool returns;
 * - the MCP Apps (extension `io.modelcontextprotocol/ui`, `text/html;profile=mcp-app`): the market chart
 *   (`ui://trader-analytics/market-chart.html`, drawn from a `get_market_events` result, fills included)
 *   and the equity chart (`ui://trader-analytics/equity-chart.html`, from `get_pnl_series`). The two
 *   tools name them in their `_meta` (`ui.resourceUri`, and the older flat `ui/resourceUri` some hosts
 *   still read); a host that supports MCP Apps reads the resource and draws the tool's result in it, a
 *   client that does not ignores `_meta` and keeps the structured result, which is unchanged.
 *
 * Registered on each request's server by `registerChartResources(server, config)` through the one
 * method both SDK lines share (`registerResource(name, uri, metadata, read)`).
 */
import type { Config } from '../../config.ts';
import {
  CHART_APP_KINDS,
  CHART_FORMATS_OF,
  CHART_KINDS,
  CHART_THEMES,
  chartApp,
  chartTemplate,
  type ChartAppKind,
  type ChartFormat,
  type ChartKind,
  type ChartTheme,
} from '../../operations/charts/templates.ts';

/** The MIME type of an MCP App resource (MCP Apps extension, 2026-01-26). */
const MCP_APP_MIME_TYPE = 'text/html;profile=mcp-app';
/** The older flat `_meta` key of a tool's App (deprecated by the extension, still read by some hosts). */
const LEGACY_RESOURCE_URI_KEY = 'ui/resourceUri';

const CHART_APP_URIS: Record<ChartAppKind, string> = {
  market: 'ui://trader-analytics/market-chart.html',
  equity: 'ui://trader-analytics/equity-chart.html',
};

/**
 * The App's `_meta.ui`: no domain of any kind (the chart fetches nothing; hosts then apply the
 * extension's restrictive default CSP), and a border around it.
 */
const CHART_APP_UI_META = {
  csp: { connectDomains: [], resourceDomains: [], frameDomains: [], baseUriDomains: [] },
  prefersBorder: true,
};

/** The `_meta` of a tool whose result an App draws. */
export function chartAppToolMeta(kind: ChartAppKind): Record<string, unknown> {
  const uri = CHART_APP_URIS[kind];
  return { ui: { resourceUri: uri }, [LEGACY_RESOURCE_URI_KEY]: uri };
}

function chartTemplateUri(kind: ChartKind, format: ChartFormat, theme: ChartTheme): string {
  return `chart-template://${kind}/${theme}.${format}`;
}

const TEMPLATE_MIME_TYPES: Record<ChartFormat, string> = { html: 'text/html', svg: 'image/svg+xml' };

const APP_DESCRIPTIONS: Record<ChartAppKind, string> = {
  market:
    "The market chart as an MCP App: draws a get_market_events result (sampled price band and line, the trader's fills as markers, the dashed way to the winner) inside the conversation; wheel zooms, drag pans, hover reads a bucket. Self-contained: no request of any kind.",
  equity:
    'The equity chart as an MCP App: draws a get_pnl_series result (profit curve, drawdown view) inside the conversation. Self-contained: no request of any kind.',
};

const TEMPLATE_DESCRIPTIONS: Record<ChartKind, string> = {
  market: 'fill __DATA__ with the get_market_events answer (optionally plus slabs); self-contained, no network',
  'market-tape': 'fill __DATA__ with the REST full tape; loads its charting library from the configured script host',
  equity: 'fill __DATA__ with the get_pnl_series answer (pnl and drawdown views)',
};

/** One resource: its URI, listing metadata and the single content item it reads as. */
interface ChartResource {
  uri: string;
  name: string;
  title: string;
  description: string;
  mimeType: string;
  _meta?: Record<string, unknown>;
  text(): string;
}

/** Every resource of the service, in listing order: the two Apps, then the templates. */
function chartResources(config: Config): ChartResource[] {
  const apps = CHART_APP_KINDS.map((kind) => ({
    uri: CHART_APP_URIS[kind],
    name: `${kind}-chart-app`,
    title: kind === 'market' ? "Market chart with the trader's fills (MCP App)" : 'Equity chart (MCP App)',
    description: APP_DESCRIPTIONS[kind],
    mimeType: MCP_APP_MIME_TYPE,
    _meta: { ui: CHART_APP_UI_META },
    text: () => chartApp(kind),
  }));
  const templates = CHART_KINDS.flatMap((kind) =>
    CHART_FORMATS_OF[kind].flatMap((format) =>
      CHART_THEMES.map((theme) => ({
        uri: chartTemplateUri(kind, format, theme),
        name: `chart-template-${kind}-${format}-${theme}`,
        title: `Chart template: ${kind}, ${format}, ${theme}`,
        description: `The get_chart_template document for kind ${kind}, format ${format}, theme ${theme}: ${TEMPLATE_DESCRIPTIONS[kind]}. Reading it is free.`,
        mimeType: TEMPLATE_MIME_TYPES[format],
        text: () => chartTemplate(kind, format, theme, config.charts.scriptHost)!,
      })),
    ),
  );
  return [...apps, ...templates];
}

/** A resource's read result: one text content item (with the App's `_meta.ui`, which hosts read here first). */
function readChartResource(resource: ChartResource) {
  return {
    contents: [
      {
        uri: resource.uri,
        mimeType: resource.mimeType,
        text: resource.text(),
        ...(resource._meta ? { _meta: resource._meta } : {}),
      },
    ],
  };
}

/** What `registerChartResources` needs of a server: the resource registration both SDK lines offer. */
export interface ResourceRegistry {
  registerResource(
    name: string,
    uri: string,
    metadata: { title: string; description: string; mimeType: string; _meta?: Record<string, unknown> },
    read: (uri: URL) => ReturnType<typeof readChartResource>,
  ): unknown;
}

export function registerChartResources(server: ResourceRegistry, config: Config): void {
  for (const resource of chartResources(config)) {
    const { uri, name, title, description, mimeType, _meta } = resource;
    server.registerResource(name, uri, { title, description, mimeType, ...(_meta ? { _meta } : {}) }, () =>
      readChartResource(resource),
    );
  }
}

/**
 * The chart templates of get_chart_template (decisions.md, Charts), read from this folder once, on first
 * use: `market` (self-contained vector chart, html or svg), `market-tape` (html, uPlot from the configured
 * script host) and `equity` (pnl and drawdown modes, html or svg), each in a night or day theme. A
 * template's one placeholder is `__DATA__`, inside `<script type="application/json" id="chart-data">`:
 * replaced by the JSON body of the matching data tool or endpoint (`fillChartTemplate` does it safely).
 */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const CHART_KINDS = ['market', 'market-tape', 'equity'] as const;
export const CHART_FORMATS = ['html', 'svg'] as const;
export const CHART_THEMES = ['night', 'day'] as const;
export type ChartKind = (typeof CHART_KINDS)[number];
export type ChartFormat = (typeof CHART_FORMATS)[number];
export type ChartTheme = (typeof CHART_THEMES)[number];

/** The formats each kind comes in: svg is a static document, so not the tape (it needs its script host). */
export const CHART_FORMATS_OF: Record<ChartKind, readonly ChartFormat[]> = {
  market: ['html', 'svg'],
  'market-tape': ['html'],
  equity: ['html', 'svg'],
};

/** The placeholder a template holds exactly once. */
const CHART_PLACEHOLDER = '__DATA__';

/** The no-request rule of the self-contained charts: inline script and style only, nothing fetched from anywhere. */
export const CHART_CSP =
  "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:; base-uri 'none'; form-action 'none'";

/** Whether Intl knows a time zone name (the charts' `time_zone`: an IANA zone such as America/New_York, or UTC). */
export function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/** The kinds offered as MCP Apps (each drawn from one data tool's result): the self-contained ones. */
export const CHART_APP_KINDS = ['market', 'equity'] as const;
export type ChartAppKind = (typeof CHART_APP_KINDS)[number];

const FOLDER = fileURLToPath(new URL('.', import.meta.url));
const sources = new Map<string, string>();
const assembled = new Map<string, string>();

function source(name: string): string {
  let text = sources.get(name);
  if (text === undefined) sources.set(name, (text = readFileSync(`${FOLDER}${name}`, 'utf8')));
  return text;
}

/** The template of a kind, format and theme (null when the kind has no such format). */
export function chartTemplate(
  kind: ChartKind,
  format: ChartFormat,
  theme: ChartTheme,
  scriptHost: string,
): string | null {
  if (!CHART_FORMATS_OF[kind].includes(format)) return null;
  const key = `${kind}.${format}.${theme}.${kind === 'market-tape' ? scriptHost : ''}`;
  let content = assembled.get(key);
  if (content === undefined) {
    // Replacement functions: `$` in the scripts is taken literally.
    content = source(`${kind}.${format}`)
      .replace('%%COMMON%%', () => source('common.js'))
      .replace('%%CHART%%', () => source(`${kind}.js`))
      .replaceAll('%%THEME%%', theme)
      .replaceAll('%%SCRIPT_HOST%%', () =>
        scriptHost.replace(/[<>"&]/g, (char) => `%${char.charCodeAt(0).toString(16).toUpperCase()}`),
      );
    if (content.split(CHART_PLACEHOLDER).length !== 2 || content.includes('%%'))
      throw new Error(
        `chart template ${kind}.${format}: expected exactly one ${CHART_PLACEHOLDER} and no other placeholder`,
      );
    assembled.set(key, content);
  }
  return content;
}

/**
 * The MCP App document of a kind (MCP Apps extension, `text/html;profile=mcp-app`): the kind's html
 * template with its chart script unchanged but deferred (wrapped as `window.__drawChart`), `__DATA__`
 * left `null`, the CSP of the no-request rule as a meta tag, and `app.js`, which speaks the host protocol
 * and fills `#chart-data` with the tool result's structuredContent before drawing. The theme follows the
 * host's (night until it says light).
 */
export function chartApp(kind: ChartAppKind): string {
  const key = `app.${kind}`;
  let content = assembled.get(key);
  if (content === undefined) {
    const shell = source(`${kind}.html`);
    const block = /<script>\n%%COMMON%%\n([\s\S]*?)<\/script>/.exec(shell);
    if (!block) throw new Error(`chart template ${kind}.html: no inline script block holding %%COMMON%%`);
    const script = [
      source('common.js'),
      'window.__drawChart = function () {',
      block[1]!.replace('%%CHART%%', () => source(`${kind}.js`)),
      '};',
      `var APP_KIND = ${JSON.stringify(kind)};`,
      source('app.js'),
    ].join('\n');
    content = shell
      .replace(block[0], () => `<script>\n${script}\n</script>`)
      .replace(
        '<meta charset="utf-8">',
        () => `<meta charset="utf-8">\n<meta http-equiv="Content-Security-Policy" content="${CHART_CSP}">`,
      )
      .replaceAll('%%THEME%%', 'night')
      .replace(CHART_PLACEHOLDER, 'null');
    if (
      content.includes(CHART_PLACEHOLDER) ||
      content.includes('%%') ||
      !content.includes('http-equiv="Content-Security-Policy"')
    )
      throw new Error(`chart app ${kind}: assembly left a placeholder or lost the CSP`);
    assembled.set(key, content);
  }
  return content;
}

/**
 * The live chart page (`GET {base_url}/live/chart`, docs/live.md): the market chart's script deferred
 * (window.__drawChart), drawn by `live.js` from the plane's events. It holds no data and no credential:
 * the key, trader and market are in the address's fragment, which the browser keeps to itself.
 */
export function liveChartPage(livePath: string, protocol: string): string {
  const key = `live.${livePath}.${protocol}`;
  let content = assembled.get(key);
  if (content === undefined) {
    content = source('market-live.html')
      .replace('%%LIVE_CONFIG%%', () => escapedJson({ path: livePath, protocol }))
      .replace('%%COMMON%%', () => source('common.js'))
      .replace('%%CHART%%', () => source('market.js'))
      .replace('%%LIVE%%', () => source('live.js'));
    if (content.includes('%%')) throw new Error('chart page market-live.html: a placeholder is left');
    assembled.set(key, content);
  }
  return content;
}

/** The live chart page's policy: the self-contained charts' rule, plus the plane on its own origin. */
export const LIVE_CHART_CSP = `${CHART_CSP}; connect-src 'self'`;

/** JSON with `<`, `>`, `&` and the line separators escaped, safe inside a script block or CDATA. */
function escapedJson(data: unknown): string {
  return JSON.stringify(data).replace(
    /[<>&\u2028\u2029]/g,
    (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}

/**
 * A template with its data: the JSON with `<`, `>` and `&` escaped (\u003c…), so no value can close the
 * script block (`</script>`) or the SVG's CDATA section (`]]>`), and the document stays well-formed.
 */
export function fillChartTemplate(template: string, data: unknown): string {
  const json = escapedJson(data);
  return template.replace(CHART_PLACEHOLDER, () => json);
}

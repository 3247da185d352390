/**
 * get_chart_template (read-api.md, tool table; decisions.md, Charts): a chart template to fill with the
 * answer of a data tool, for an agent to hand to a person. No REST twin; costs one request like every tool.
 */
import { z } from 'zod';
import type { Config } from '../../config.ts';
import { ApiError } from '../../operations/errors.ts';
import {
  CHART_FORMATS,
  CHART_FORMATS_OF,
  CHART_KINDS,
  CHART_THEMES,
  chartTemplate,
} from '../../operations/charts/templates.ts';
import { defineTool, type Tool } from '../tool.ts';
import { COST, describe } from './arguments.ts';

const chartTemplateSchema = z.object({
  kind: z.enum(CHART_KINDS),
  format: z.enum(CHART_FORMATS),
  theme: z.enum(CHART_THEMES),
  content: z
    .string()
    .meta({ description: 'The template: an HTML or SVG document holding the placeholder __DATA__ exactly once.' }),
});

const chartTemplateInputSchema = z.object({
  kind: z.enum(CHART_KINDS).optional().meta({
    description:
      'market (default; the sampled chart of get_market_events, vector, no external fetch), market-tape (the full tape of the REST tape endpoint; html only; loads its charting library from a script host), or equity (get_pnl_series; pnl and drawdown modes).',
  }),
  format: z
    .enum(CHART_FORMATS)
    .optional()
    .meta({ description: 'html (default; every kind) or svg (market and equity: a static SVG document).' }),
  theme: z.enum(CHART_THEMES).optional().meta({ description: 'night (default) or day.' }),
});

export function chartTools(_config: Config): Tool[] {
  return [
    defineTool({
      name: 'get_chart_template',
      title: 'A chart template to fill with data and hand to a person',
      description: describe(
        'Returns {kind, format, theme, content}: an HTML (or SVG) chart document whose one placeholder __DATA__ (inside a <script type="application/json"> block) you replace with the JSON of a data answer, then save as a .html/.svg file for a person to open.',
        'kind market: fill with the get_market_events answer as is (optionally plus slabs [{fidelity, from_ts, to_ts, points}] of finer rungs for zooming); self-contained, no network. kind equity: fill with the get_pnl_series answer (pnl and drawdown views). kind market-tape: fill with the REST full tape {market, trader, tape} (add fills from get_market_events to see the markers); html only, it loads its charting library from a script host.',
        'Escape <, > and & in the JSON as \\u003c, \\u003e, \\u0026 before inserting it. The chart follows the data conventions: line at (lo + hi) / 2, band lo..hi, gaps left open, fills as markers colored by token and sized by usd, the dashed way to the winner level. The template does not change between calls: fetch it once per kind, format and theme; the same documents are also free MCP resources (resources/read chart-template://<kind>/<theme>.<format>, e.g. chart-template://market/night.html).',
        COST,
      ),
      input: chartTemplateInputSchema,
      output: chartTemplateSchema,
      traderScoped: false,
      run: (context, _call, args) => {
        const kind = args.kind ?? 'market';
        const format = args.format ?? 'html';
        const theme = args.theme ?? 'night';
        const content = chartTemplate(kind, format, theme, context.config.charts.scriptHost);
        if (content === null) {
          throw new ApiError(
            422,
            'unsupported_format',
            `kind ${kind} comes as ${CHART_FORMATS_OF[kind].join(' or ')}, not ${format}: svg is for market and equity.`,
            {
              kind,
              format,
              formats: [...CHART_FORMATS_OF[kind]],
            },
          );
        }
        return { kind, format, theme, content };
      },
    }),
  ];
}

/**
 * The equity (profit) curve of a trader, as the upstream provider reports it: points `[ts, pnl_usd]`
 * over a window, with peak, low and the worst drawdown. The upstream's own state (online, or offline
 * since when) comes with it, so the reader can say the curve is unavailable rather than stale.
 */
import { z } from 'zod';
import { plainSources, type ReadSources } from './sources.ts';
import type { Store } from './store.ts';
import type { EquityPoint, UpstreamReport } from './upstream-history.ts';

export const EQUITY_WINDOWS = ['24h', '7d', '30d', 'ytd', '1y', 'all'] as const;
export type EquityWindow = (typeof EQUITY_WINDOWS)[number];

const DAY = 86_400;
const ROLLING: Record<Exclude<EquityWindow, 'ytd' | 'all'>, number> = {
  '24h': DAY,
  '7d': 7 * DAY,
  '30d': 30 * DAY,
  '1y': 365 * DAY,
};

/** The first instant inside a window ending now: a rolling span back, 1 January (UTC) for ytd, 0 for all. */
export function windowStart(window: EquityWindow, nowSeconds: number): number {
  if (window === 'all') return 0;
  if (window === 'ytd') return Date.UTC(new Date(nowSeconds * 1000).getUTCFullYear(), 0, 1) / 1000;
  return nowSeconds - ROLLING[window];
}

export interface DrawdownStats {
  peak: number | null;
  low: number | null;
  /** The worst `running_max − p[i]`, as a positive magnitude (0 when the curve never falls). */
  max_drawdown: number;
}

/** Peak, low and the worst drawdown of a series in time order (dd[i] = p[i] − running max). */
export function drawdownStats(points: readonly EquityPoint[]): DrawdownStats {
  let peak: number | null = null;
  let low: number | null = null;
  let runningMax = Number.NEGATIVE_INFINITY;
  let maxDrawdown = 0;
  for (const [, pnl] of points) {
    if (peak === null || pnl > peak) peak = pnl;
    if (low === null || pnl < low) low = pnl;
    if (pnl > runningMax) runningMax = pnl;
    maxDrawdown = Math.max(maxDrawdown, runningMax - pnl);
  }
  return { peak, low, max_drawdown: maxDrawdown };
}

export interface UpstreamState {
  state: 'online' | 'offline';
  /** The last heartbeat (epoch seconds), null when none was ever received. */
  heartbeat_at: number | null;
}

/** Offline when the poller said so, or when its heartbeats stopped coming. */
export async function readUpstreamState(
  store: Store,
  nowSeconds: number,
  staleAfterSeconds: number,
  sources: ReadSources = plainSources(store),
): Promise<UpstreamState> {
  // The report may be kept a moment, not the state: freshness is judged against this call's clock.
  return upstreamStateOf(await sources.upstreamReport(), nowSeconds, staleAfterSeconds);
}

/** The state from the poller's latest report (null: no report ever). */
function upstreamStateOf(row: UpstreamReport | null, nowSeconds: number, staleAfterSeconds: number): UpstreamState {
  if (!row) return { state: 'offline', heartbeat_at: null };
  const fresh = nowSeconds - row.ts <= staleAfterSeconds;
  return { state: row.state === 'online' && fresh ? 'online' : 'offline', heartbeat_at: row.ts };
}

/** The response body of an equity series (the route adds `trader`). */
export const equitySeriesSchema = z.object({
  window: z.enum(EQUITY_WINDOWS),
  model: z.literal('upstream_profile'),
  series: z.array(z.tuple([z.int(), z.number()])).meta({ description: '[ts, pnl_usd] points in time order.' }),
  peak: z.number().nullable().meta({ description: 'Highest pnl_usd in the window; null without points.' }),
  low: z.number().nullable().meta({ description: 'Lowest pnl_usd in the window; null without points.' }),
  max_drawdown: z.number().min(0).meta({
    description:
      'Worst drawdown as a positive magnitude: max over i of running_max − p[i] (per point dd[i] = p[i] − running_max).',
  }),
  as_of: z.int().nullable().meta({
    description: "When the upstream's figures were taken (epoch seconds); null when it has none for this trader.",
  }),
});

export type EquitySeries = z.infer<typeof equitySeriesSchema> & {
  upstream: UpstreamState;
  /** The provider has reported on the wallet (a profile or equity points): without either, no curve is the provider's. */
  reported: boolean;
};

/**
 * The series over a window ending now, cut from the wallet's full upstream history (upstream-history.ts:
 * the read the card's upstream block shares, kept until the provider reports on the wallet again), so
 * every window and every clock is served from the same kept answer. `as_of` is the later of the
 * profile's report and the newest point.
 */
export async function readEquitySeries(
  store: Store,
  wallet: string,
  window: EquityWindow,
  options: { nowSeconds: number; upstreamStaleAfterSeconds: number },
  sources: ReadSources = plainSources(store),
): Promise<EquitySeries> {
  const [history, upstream] = await Promise.all([
    sources.upstreamHistory(wallet),
    readUpstreamState(store, options.nowSeconds, options.upstreamStaleAfterSeconds, sources),
  ]);
  const from = windowStart(window, options.nowSeconds);
  const series = history.points.filter(([ts]) => ts >= from && ts <= options.nowSeconds);
  const asOf = Math.max(history.profile?.as_of ?? 0, history.points.at(-1)?.[0] ?? 0);
  return {
    window,
    model: 'upstream_profile',
    series,
    ...drawdownStats(series),
    as_of: asOf > 0 ? asOf : null,
    upstream,
    reported: history.profile !== null || history.points.length > 0,
  };
}

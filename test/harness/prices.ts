/**
 * Price reads the tests and benchmarks need that the service never serves alone, composed from the
 * service's own parts (no SQL of their own): a market's times without a trader (the service reads them
 * with the trader's row: readTraderMarket), and a sampled series without the trader's fills (the service
 * reads both in one statement: readSampledChart).
 */
import { bundle, readBundle } from '../../projections/bundle.ts';
import {
  MARKET_TRADE_SPAN_PART,
  marketMetaPart,
  marketResolutionPart,
  marketTimesOf,
  type MarketMetaRow,
  type MarketResolutionRow,
  type MarketTimes,
  type MarketTradeSpanRow,
} from '../../projections/market-parts.ts';
import {
  planChart,
  readRung,
  type ChartLimits,
  type ChartRequest,
  type SampledSeries,
} from '../../projections/prices.ts';
import type { Store } from '../../projections/store.ts';

const READ_MARKET_TIMES = bundle<{ meta: MarketMetaRow; trades: MarketTradeSpanRow; resolution: MarketResolutionRow }>({
  meta: marketMetaPart(),
  trades: MARKET_TRADE_SPAN_PART,
  resolution: marketResolutionPart(),
});

/** The market's times, or null when the market is unknown (no metadata and no trades): the parts readTraderMarket reads, without the trader's row. */
export async function readMarketTimes(store: Store, conditionId: string): Promise<MarketTimes | null> {
  const parts = await readBundle(store, READ_MARKET_TIMES, { condition_id: conditionId });
  return marketTimesOf(conditionId, parts.meta[0], parts.trades[0], parts.resolution[0]);
}

/** The sampled series of a chart request (the rung readSampledChart plans and reads), without the fills; empty buckets are absent. */
export async function readSampledSeries(
  store: Store,
  times: MarketTimes,
  request: ChartRequest,
  limits: ChartLimits,
  nowSeconds: number,
): Promise<SampledSeries> {
  const plan = planChart(times, request, limits, nowSeconds);
  const points = await readRung(store, times.conditionId, plan.fidelity, plan.fromTs, plan.toTs);
  return { from_ts: plan.fromTs, to_ts: plan.toTs, fidelity: plan.fidelity, points };
}

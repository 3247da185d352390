/**
 * A wallet's rows from the upstream provider: its latest profile and its full equity history. One read
 * behind both the card's `upstream` block (upstream.ts: the profile with the history's extremes) and the
 * pnl-series (equity.ts: a window cut from the history), kept as an answer that follows only the
 * provider's rows of the wallet (operations/reads.ts): an agent that asks for the card and then the curve,
 * or for several windows, sends one statement. Also the provider's latest status report.
 */
import { bundle, readBundle } from './bundle.ts';
import type { Store } from './store.ts';

/** A point of the equity (profit) history: when, and the provider's profit then. */
export type EquityPoint = [ts: number, pnl_usd: number];

/** The provider's latest profile row of a wallet (the card folds the history's extremes into it: upstream.ts). */
interface UpstreamProfileRow {
  as_of: number;
  pnl: number;
  pnl_realized: number;
  pnl_unrealized: number;
  portfolio_value: number;
  profile_image: string;
}

export interface UpstreamHistory {
  /** Null when the provider never reported a profile of the wallet. */
  profile: UpstreamProfileRow | null;
  /** Every equity point, in time order. */
  points: EquityPoint[];
}

/**
 * Plain reads by the wallet prefix of their keys (a bundle, projections/bundle.ts): the latest profile
 * (ReplacingMergeTree on as_of: its newest version, without FINAL) and the full equity history (FINAL: the
 * table has no version column, so only a merge says which copy of a point is the last one). Folds (peak,
 * low, drawdown, windows) are done by the callers, not in SQL: a window function over a join costs the
 * engine more to plan than these few hundred points cost to send.
 */
const READ_UPSTREAM_HISTORY = bundle<{ profile: UpstreamProfileRow; equity: { ts: number; pnl_usd: number } }>({
  profile: `
    SELECT as_of, pnl, pnl_realized, pnl_unrealized, portfolio_value, profile_image
    FROM {db:Identifier}.upstream_profiles
    WHERE wallet = {wallet:String}
    ORDER BY as_of DESC
    LIMIT 1`,
  equity: `
    SELECT ts, pnl_usd
    FROM {db:Identifier}.upstream_equity FINAL
    WHERE wallet = {wallet:String}`,
});

/** The wallet's upstream profile and equity history. */
export async function readUpstreamHistory(store: Store, wallet: string): Promise<UpstreamHistory> {
  const parts = await readBundle(store, READ_UPSTREAM_HISTORY, { wallet });
  const points = parts.equity.map((row): EquityPoint => [row.ts, row.pnl_usd]).sort((a, b) => a[0] - b[0]);
  return { profile: parts.profile[0] ?? null, points };
}

/** The upstream poller's latest status report (online or not, and when); null: none ever. */
export interface UpstreamReport {
  state: string;
  ts: number;
}

/**
 * The newest second's row, read backwards in the sort key (ts) without FINAL, so only the last granule of
 * each part is touched, not the table.
 */
const READ_UPSTREAM_REPORT = `
SELECT state, ts
FROM {db:Identifier}.upstream_status
ORDER BY ts DESC
LIMIT 1`;

export async function readUpstreamReport(store: Store): Promise<UpstreamReport | null> {
  const [row] = await store.query<UpstreamReport>(READ_UPSTREAM_REPORT);
  return row ?? null;
}

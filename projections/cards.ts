/**
 * The trader card: the archive's career statistics blended with the upstream provider's own figures.
 * The card never fails because of the upstream: when it is offline, the `upstream` block says so and
 * only then does the card carry the archive's own profit figures (`career_pnl_usd`, `pnl_marked_usd`).
 */
import { z } from 'zod';
import { careerCardSchema, careerOf, READ_CAREER, type CareerCard, type CareerRow } from './careers.ts';
import { READ_UPSTREAM_STATE, upstreamStateOf } from './equity.ts';
import type { Store } from './store.ts';
import { traderSchema, type Trader } from './traders.ts';
import { READ_UPSTREAM_PROFILE, upstreamProfileSchema, type UpstreamProfile } from './upstream.ts';

const upstreamOfflineBlock = z
  .object({ status: z.literal('upstream_offline') })
  .meta({ description: 'The upstream provider is unreachable; the card falls back to the archive figures career_pnl_usd and pnl_marked_usd.' });

export const traderCardSchema = z.object({
  trader: traderSchema,
  card: careerCardSchema,
  upstream: z.union([upstreamProfileSchema, upstreamOfflineBlock]),
});
export type TraderCard = z.infer<typeof traderCardSchema>;

export interface CardSettings {
  /** Card statistics cover the V2 era until a v1 backfill is declared done. */
  includeV1: boolean;
  upstreamStaleAfterSeconds: number;
}

/**
 * The card in one statement: the career (READ_CAREER), the upstream profile (READ_UPSTREAM_PROFILE) and
 * the upstream's state (READ_UPSTREAM_STATE), each folded to exactly one row with a count that says
 * whether the part exists (`any` of an empty part is a default, never used).
 */
const READ_CARD = `
SELECT career.*, profile.*, status.*
FROM
(
    SELECT
        count() AS career_found,
        any(markets_total) AS markets_total, any(resolved_total) AS resolved_total, any(winrate) AS winrate,
        any(volume_usd) AS volume_usd, any(first_seen) AS first_seen, any(last_seen) AS last_seen,
        any(avg_entry_price) AS avg_entry_price, any(avg_win_usd) AS avg_win_usd, any(avg_loss_usd) AS avg_loss_usd,
        any(open_markets) AS open_markets, any(career_pnl_usd) AS career_pnl_usd, any(fills_count) AS fills_count,
        any(open_value_usd) AS open_value_usd, any(open_cash_flow_usd) AS open_cash_flow_usd,
        any(unmarked_markets) AS unmarked_markets, any(marked_at) AS marked_at
    FROM (${READ_CAREER})
) AS career
CROSS JOIN
(
    SELECT
        count() AS profile_found,
        any(pnl) AS pnl, any(pnl_realized) AS pnl_realized, any(pnl_unrealized) AS pnl_unrealized,
        any(portfolio_value) AS portfolio_value, any(peak) AS peak, any(low) AS low, any(max_drawdown) AS max_drawdown,
        any(profile_image) AS profile_image, any(as_of) AS as_of
    FROM (${READ_UPSTREAM_PROFILE})
) AS profile
CROSS JOIN
(
    SELECT count() AS status_found, any(state) AS state, any(ts) AS ts
    FROM (${READ_UPSTREAM_STATE})
) AS status`;

type CardRow = CareerRow &
  UpstreamProfile & { career_found: number; profile_found: number; status_found: number; state: string; ts: number };

export async function readTraderCard(store: Store, trader: Trader, settings: CardSettings, nowSeconds: number): Promise<TraderCard> {
  const [row] = await store.query<CardRow>(READ_CARD, { wallet: trader.wallet, include_v1: settings.includeV1 ? 1 : 0 });
  if (!row) throw new Error('the card statement returned no row');
  const career = careerOf(row.career_found > 0 ? pickCareer(row) : undefined);
  const profile: UpstreamProfile | null = row.profile_found > 0 ? pickProfile(row) : null;
  const upstreamState = upstreamStateOf(row.status_found > 0 ? { state: row.state, ts: row.ts } : undefined, nowSeconds, settings.upstreamStaleAfterSeconds);
  const { career_pnl_usd, pnl_marked_usd, fills_count: _fills, ...statistics } = career;
  if (upstreamState.state === 'offline') {
    const card: CareerCard = { ...statistics, career_pnl_usd, pnl_marked_usd };
    return { trader, card, upstream: { status: 'upstream_offline' } };
  }
  const upstream: UpstreamProfile = profile ?? {
    // Online, but the provider has nothing on this wallet: its figures are zero as of its last heartbeat.
    pnl: 0,
    pnl_realized: 0,
    pnl_unrealized: 0,
    portfolio_value: 0,
    peak: 0,
    low: 0,
    max_drawdown: 0,
    profile_image: '',
    as_of: upstreamState.heartbeat_at ?? nowSeconds,
  };
  return { trader, card: statistics, upstream };
}

function pickCareer(row: CardRow): CareerRow {
  return {
    markets_total: row.markets_total,
    resolved_total: row.resolved_total,
    winrate: row.winrate,
    volume_usd: row.volume_usd,
    first_seen: row.first_seen,
    last_seen: row.last_seen,
    avg_entry_price: row.avg_entry_price,
    avg_win_usd: row.avg_win_usd,
    avg_loss_usd: row.avg_loss_usd,
    open_markets: row.open_markets,
    career_pnl_usd: row.career_pnl_usd,
    fills_count: row.fills_count,
    open_value_usd: row.open_value_usd,
    open_cash_flow_usd: row.open_cash_flow_usd,
    unmarked_markets: row.unmarked_markets,
    marked_at: row.marked_at,
  };
}

function pickProfile(row: CardRow): UpstreamProfile {
  return {
    pnl: row.pnl,
    pnl_realized: row.pnl_realized,
    pnl_unrealized: row.pnl_unrealized,
    portfolio_value: row.portfolio_value,
    peak: row.peak,
    low: row.low,
    max_drawdown: row.max_drawdown,
    profile_image: row.profile_image,
    as_of: row.as_of,
  };
}

/**
 * The career statistics of a trader: every figure of the card's `card` block, plus the archive's own
 * profit figures (`career_pnl_usd`, `pnl_marked_usd`) that the card falls back to when the upstream is
 * offline. Every figure is folded at read time from the trader's rows of the trader_markets_v2 rollup
 * and each market's last trade (READ_CAREER).
 */
import { z } from 'zod';
import type { Store } from './store.ts';

export interface CareerStatistics {
  markets_total: number;
  resolved_total: number;
  /** Share of resolved markets with a positive result; null when nothing has resolved. */
  winrate: number | null;
  volume_usd: number;
  first_seen: number;
  last_seen: number;
  /** Average cost per token over all buys (both sides, token-weighted): the break-even winrate. Null until populated. */
  avg_entry_price: number | null;
  avg_win_usd: number | null;
  /** Served negative. */
  avg_loss_usd: number | null;
  open_value_usd: number;
  open_markets: number;
  unmarked_markets: number;
  marked_at: number | null;
  /** Realized result over resolved markets. */
  career_pnl_usd: number;
  /** Realized result plus open markets at their marks (cash flow plus holdings at the last trade). */
  pnl_marked_usd: number;
  fills_count: number;
}

/** A wallet the archive has never seen: a zeroed card, not an error. Averages are unavailable, not zero. */
export const ZERO_CAREER: Readonly<CareerStatistics> = Object.freeze({
  markets_total: 0,
  resolved_total: 0,
  winrate: null,
  volume_usd: 0,
  first_seen: 0,
  last_seen: 0,
  avg_entry_price: null,
  avg_win_usd: null,
  avg_loss_usd: null,
  open_value_usd: 0,
  open_markets: 0,
  unmarked_markets: 0,
  marked_at: null,
  career_pnl_usd: 0,
  pnl_marked_usd: 0,
  fills_count: 0,
});

/**
 * One indexed read, one pass: the wallet's trader_markets_v2 rows (each market's newest version, ORDER BY
 * version DESC LIMIT 1 BY: the rule of ReplacingMergeTree, by the wallet prefix of the key), joined with
 * the marks of its markets (argMax of the last trade, UP space, by primary key), folded into every
 * career figure: the static ones (what the careers rollup held until migration 0011: it is computed here
 * from the rows the open-market figures read anyway, so no refresh recomputes a wallet's whole career
 * when one of its markets changes) and those that move with the market (open value at the marks,
 * unmarked markets, the latest mark). Holdings at the mark: token 1 at `mark`, token 2 at `1 − mark`.
 * A wallet without rows (in the card's era) gives no row.
 */
export const READ_CAREER = `
SELECT
    markets AS markets_total,
    resolved_markets AS resolved_total,
    if(resolved_markets = 0, NULL, wins / resolved_markets) AS winrate,
    volume AS volume_usd,
    first_at AS first_seen,
    last_at AS last_seen,
    if(bought_tokens > 0, bought_usd / bought_tokens, NULL) AS avg_entry_price,
    if(wins = 0, NULL, win_average) AS avg_win_usd,
    if(losses = 0, NULL, loss_average) AS avg_loss_usd,
    open_count AS open_markets,
    realized AS career_pnl_usd,
    fills AS fills_count,
    open_value AS open_value_usd,
    open_cash_flow AS open_cash_flow_usd,
    unmarked AS unmarked_markets,
    latest_mark AS marked_at
FROM
(
    SELECT
        toUInt32(count()) AS markets,
        toUInt32(countIf(tm.resolved)) AS resolved_markets,
        toUInt32(countIf(tm.resolved AND tm.pnl_usd > 0)) AS wins,
        toUInt32(countIf(tm.resolved AND tm.pnl_usd < 0)) AS losses,
        sum(tm.buy_usd + tm.sell_usd) AS volume,
        min(tm.first_ts) AS first_at,
        max(tm.last_ts) AS last_at,
        sum(tm.buy_usd) AS bought_usd,
        sum(tm.buy_tokens) AS bought_tokens,
        avgIf(tm.pnl_usd, tm.resolved AND tm.pnl_usd > 0) AS win_average,
        avgIf(tm.pnl_usd, tm.resolved AND tm.pnl_usd < 0) AS loss_average,
        sumIf(tm.pnl_usd, tm.resolved) AS realized,
        toUInt32(countIf(NOT tm.resolved)) AS open_count,
        sum(tm.fills_count) AS fills,
        sumIf(tm.net_tokens1 * marks.mark + tm.net_tokens2 * (1 - marks.mark), NOT tm.resolved AND marks.mark IS NOT NULL) AS open_value,
        sumIf(tm.cash_flow_usd, NOT tm.resolved) AS open_cash_flow,
        toUInt32(countIf(NOT tm.resolved AND marks.mark IS NULL)) AS unmarked,
        maxIf(marks.marked_at, NOT tm.resolved) AS latest_mark
    FROM
    (
        SELECT condition_id, resolved, pnl_usd, buy_usd, sell_usd, buy_tokens, fills_count, first_ts, last_ts,
               net_tokens1, net_tokens2, cash_flow_usd, era
        FROM {db:Identifier}.trader_markets_v2
        WHERE wallet = {wallet:String}
        ORDER BY version DESC
        LIMIT 1 BY condition_id
    ) AS tm
    LEFT JOIN
    (
        SELECT condition_id, argMaxMerge(last_up_price) AS mark, max(last_ts) AS marked_at
        FROM {db:Identifier}.market_marks_v2
        WHERE condition_id IN (SELECT condition_id FROM {db:Identifier}.trader_markets_v2 WHERE wallet = {wallet:String})
        GROUP BY condition_id
    ) AS marks ON marks.condition_id = tm.condition_id
    WHERE {include_v1:UInt8} = 1 OR tm.era = 'v2'
    HAVING count() > 0
    SETTINGS join_use_nulls = 1
)`;

export interface CareerRow extends Omit<CareerStatistics, 'pnl_marked_usd' | 'open_value_usd'> {
  open_value_usd: number | null;
  open_cash_flow_usd: number | null;
}

export async function readCareer(store: Store, wallet: string, includeV1: boolean): Promise<CareerStatistics> {
  const [row] = await store.query<CareerRow>(READ_CAREER, { wallet, include_v1: includeV1 ? 1 : 0 });
  return careerOf(row);
}

/** The statistics from READ_CAREER's row (absent: a wallet the archive has never seen). */
export function careerOf(row: CareerRow | undefined): CareerStatistics {
  if (!row) return { ...ZERO_CAREER };
  const openValue = row.open_value_usd ?? 0;
  const { open_cash_flow_usd: openCashFlow, ...career } = row;
  return {
    ...career,
    open_value_usd: openValue,
    // An unmarked open market counts with its cash flow only: its holdings have no price yet.
    pnl_marked_usd: row.career_pnl_usd + (openCashFlow ?? 0) + openValue,
  };
}

const nullableAverage = (description: string) => z.number().nullable().optional().meta({ description });

/** The card's `card` block. The two archive profit figures appear only when the upstream is offline. */
export const careerCardSchema = z.object({
  markets_total: z.int().min(0),
  resolved_total: z.int().min(0),
  winrate: z.number().min(0).max(1).nullable().meta({ description: 'Share of resolved markets won; null when nothing has resolved.' }),
  volume_usd: z.number(),
  first_seen: z.int().min(0).meta({ description: 'Epoch seconds; 0 for a wallet never seen.' }),
  last_seen: z.int().min(0),
  avg_entry_price: nullableAverage(
    'Average cost per token across all buys (both outcome sides, token-weighted): the break-even winrate. Missing or null means unavailable (not yet populated), never zero.',
  ),
  avg_win_usd: nullableAverage('Average result of a won resolved market; missing or null means unavailable. An average, not a median.'),
  avg_loss_usd: nullableAverage('Average result of a lost resolved market, served negative; missing or null means unavailable.'),
  open_value_usd: z.number().meta({ description: 'Open holdings at each market\'s last trade.' }),
  open_markets: z.int().min(0),
  unmarked_markets: z.int().min(0).meta({ description: 'Open markets with no trade mark yet (not in open_value_usd).' }),
  marked_at: z.int().nullable().meta({ description: 'Latest mark used for open_value_usd (epoch seconds); null without marks.' }),
  career_pnl_usd: z.number().optional().meta({
    description: "Only when the upstream is offline: the archive's realized result over resolved markets (a fallback; quote upstream.pnl when it is there).",
  }),
  pnl_marked_usd: z.number().optional().meta({
    description: 'Only when the upstream is offline: realized result plus open markets at their marks (a fallback).',
  }),
});
export type CareerCard = z.infer<typeof careerCardSchema>;

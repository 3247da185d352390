/**
 * The career statistics of a trader: every figure of the card's `card` block, plus the archive's own
 * profit figures (`career_pnl_usd`, `pnl_marked_usd`) that the card falls back to when the upstream is
 * offline. Static figures come from the `careers` rollup; figures that move with the market (open value,
 * marks) are computed here from the trader's open rows and each market's last trade.
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
 * One indexed read: the careers row of the wallet, and its open trader_markets rows joined with their
 * markets' marks (argMax of the last trade, UP space). Holdings at the mark: token 1 at `mark`, token 2
 * at `1 − mark`. Each row is its key's newest version (ORDER BY version DESC LIMIT 1 [BY]: the rule of
 * ReplacingMergeTree) rather than FINAL; the wallet's rows are read once, and the marks of its markets
 * by primary key.
 */
export const READ_CAREER = `
WITH open_rows AS
(
    SELECT
        tm.condition_id AS condition_id,
        tm.net_tokens1 AS net1,
        tm.net_tokens2 AS net2,
        tm.cash_flow_usd AS cash_flow,
        marks.mark AS mark,
        marks.marked_at AS marked_at
    FROM
    (
        SELECT condition_id, net_tokens1, net_tokens2, cash_flow_usd, resolved, era
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
    WHERE NOT tm.resolved AND ({include_v1:UInt8} = 1 OR tm.era = 'v2')
    SETTINGS join_use_nulls = 1
)
SELECT
    c.markets_total AS markets_total,
    c.resolved_total AS resolved_total,
    c.winrate AS winrate,
    c.volume_usd AS volume_usd,
    c.first_seen AS first_seen,
    c.last_seen AS last_seen,
    c.avg_entry_price AS avg_entry_price,
    c.avg_win_usd AS avg_win_usd,
    c.avg_loss_usd AS avg_loss_usd,
    c.open_markets AS open_markets,
    c.career_pnl_usd AS career_pnl_usd,
    c.fills_count AS fills_count,
    -- One pass over the open rows (four scalar subqueries would each recompute them).
    o.1 AS open_value_usd,
    o.2 AS open_cash_flow_usd,
    o.3 AS unmarked_markets,
    o.4 AS marked_at
FROM
(
    SELECT * FROM {db:Identifier}.careers_v2
    WHERE wallet = {wallet:String}
    ORDER BY version DESC
    LIMIT 1
) AS c
CROSS JOIN
(
    SELECT tuple(sumIf(net1 * mark + net2 * (1 - mark), mark IS NOT NULL), sum(cash_flow), countIf(mark IS NULL), maxOrNull(marked_at)) AS o
    FROM open_rows
) AS open_totals`;

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

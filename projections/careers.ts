/**
 * The career statistics of a trader: every figure of the card's `card` block, plus the archive's own
 * profit figures (`career_pnl_usd`, `pnl_marked_usd`) that the card falls back to when the upstream is
 * offline. Every figure is folded at read time from the trader's rows of the trader_markets_v2 rollup
 * and each open market's last trade (CAREER_PARTS, foldCareer).
 */
import { z } from 'zod';
import { bundle, readBundle } from './bundle.ts';
import { marksOfOpenMarketsPart } from './market-parts.ts';
import { readForTrader } from './read-cache.ts';
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
 * The parts of a career, plain reads by primary key (a bundle, projections/bundle.ts): the wallet's
 * markets, each one's newest trader_markets_v2 row (ORDER BY version DESC LIMIT 1 BY: the rule of
 * ReplacingMergeTree, by the wallet prefix of the key, without FINAL; the era filter applies to the
 * newest row, in the fold), and the marks of its open markets with their times (market-parts.ts; the
 * fold reads marks of open markets only). The fold is foldCareer: one statement that joined the two and
 * computed eighteen aggregates cost the engine ~9 ms to plan for ~2 ms of reading.
 */
const CAREER_PARTS = {
  markets: `
    SELECT condition_id, resolved, pnl_usd, buy_usd, sell_usd, buy_tokens, fills_count, first_ts, last_ts,
           net_tokens1, net_tokens2, cash_flow_usd, era
    FROM {db:Identifier}.trader_markets_v2
    WHERE wallet = {wallet:String}
    ORDER BY version DESC
    LIMIT 1 BY condition_id`,
  marks: marksOfOpenMarketsPart('argMaxMerge(last_up_price) AS mark, max(last_ts) AS marked_at'),
};

interface CareerParts {
  markets: CareerMarketRow;
  marks: Mark & { condition_id: string };
}

const READ_CAREER = bundle<CareerParts>(CAREER_PARTS);

export interface CareerMarketRow {
  condition_id: string;
  resolved: boolean;
  pnl_usd: number;
  buy_usd: number;
  sell_usd: number;
  buy_tokens: number;
  fills_count: number;
  first_ts: number;
  last_ts: number;
  net_tokens1: number;
  net_tokens2: number;
  cash_flow_usd: number;
  era: string;
}

export interface Mark {
  mark: number;
  marked_at: number;
}

/** The career of a wallet (the card's era: V2 only unless `includeV1`). */
export async function readCareer(store: Store, wallet: string, includeV1: boolean): Promise<CareerStatistics> {
  return readForTrader(store, 'career', wallet, includeV1, async () => careerOf(await readBundle(store, READ_CAREER, { wallet }), includeV1));
}

/** The career from its parts (CAREER_PARTS). */
function careerOf(parts: { markets: readonly CareerMarketRow[]; marks: readonly (Mark & { condition_id: string })[] }, includeV1: boolean): CareerStatistics {
  const marks = new Map(parts.marks.map((row) => [row.condition_id, { mark: row.mark, marked_at: row.marked_at }]));
  return foldCareer(
    parts.markets.filter((row) => includeV1 || row.era === 'v2'),
    marks,
  );
}

/**
 * Every career figure from the wallet's market rows (in the card's era) and the marks of its open
 * markets. Holdings at the mark: token 1 at `mark`, token 2 at `1 − mark`; an unmarked open market
 * counts with its cash flow only. No rows: the zeroed career of a wallet never seen.
 */
export function foldCareer(rows: readonly CareerMarketRow[], marks: ReadonlyMap<string, Mark>): CareerStatistics {
  if (rows.length === 0) return { ...ZERO_CAREER };
  let resolved = 0;
  let wins = 0;
  let winSum = 0;
  let losses = 0;
  let lossSum = 0;
  let realized = 0;
  let volume = 0;
  let boughtUsd = 0;
  let boughtTokens = 0;
  let fills = 0;
  let firstSeen = Number.POSITIVE_INFINITY;
  let lastSeen = 0;
  let openMarkets = 0;
  let openValue = 0;
  let openCashFlow = 0;
  let unmarked = 0;
  let markedAt: number | null = null;
  for (const row of rows) {
    volume += row.buy_usd + row.sell_usd;
    boughtUsd += row.buy_usd;
    boughtTokens += row.buy_tokens;
    fills += row.fills_count;
    firstSeen = Math.min(firstSeen, row.first_ts);
    lastSeen = Math.max(lastSeen, row.last_ts);
    if (row.resolved) {
      resolved += 1;
      realized += row.pnl_usd;
      if (row.pnl_usd > 0) {
        wins += 1;
        winSum += row.pnl_usd;
      } else if (row.pnl_usd < 0) {
        losses += 1;
        lossSum += row.pnl_usd;
      }
      continue;
    }
    openMarkets += 1;
    openCashFlow += row.cash_flow_usd;
    const mark = marks.get(row.condition_id);
    if (!mark) {
      unmarked += 1;
      continue;
    }
    openValue += row.net_tokens1 * mark.mark + row.net_tokens2 * (1 - mark.mark);
    markedAt = markedAt === null ? mark.marked_at : Math.max(markedAt, mark.marked_at);
  }
  return {
    markets_total: rows.length,
    resolved_total: resolved,
    winrate: resolved === 0 ? null : wins / resolved,
    volume_usd: volume,
    first_seen: firstSeen,
    last_seen: lastSeen,
    avg_entry_price: boughtTokens > 0 ? boughtUsd / boughtTokens : null,
    avg_win_usd: wins === 0 ? null : winSum / wins,
    avg_loss_usd: losses === 0 ? null : lossSum / losses,
    open_value_usd: openValue,
    open_markets: openMarkets,
    unmarked_markets: unmarked,
    marked_at: markedAt,
    career_pnl_usd: realized,
    pnl_marked_usd: realized + openCashFlow + openValue,
    fills_count: fills,
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

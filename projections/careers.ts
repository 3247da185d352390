/**
 * The career statistics of a trader: every figure of the card's `card` block, plus the archive's own
 * profit figures (`career_pnl_usd`, `pnl_marked_usd`) that the card falls back to when the upstream is
 * offline. Every figure is folded at read time from the trader's rows of the trader_markets_v2 rollup
 * and each open market's last trade (wallet-markets.ts, foldCareer).
 */
import { z } from 'zod';
import { coverageSchema } from './coverage.ts';
import type { Store } from './store.ts';
import { plainSources, type ReadSources } from './sources.ts';
import type { MarketMark, WalletMarketRow } from './wallet-markets.ts';

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

/** The columns of a wallet's market rows the career folds. */
type CareerMarketRow = Pick<
  WalletMarketRow,
  | 'condition_id'
  | 'resolved'
  | 'pnl_usd'
  | 'buy_usd'
  | 'sell_usd'
  | 'buy_tokens'
  | 'fills_count'
  | 'first_ts'
  | 'last_ts'
  | 'net_tokens1'
  | 'net_tokens2'
  | 'cash_flow_usd'
  | 'era'
>;

/** An open market's mark and when it was made. */
type Mark = MarketMark;

/**
 * The career of a wallet (the card's era: V2 only unless `includeV1`), folded (foldCareer) from the
 * wallet's markets and their marks (wallet-markets.ts: read once for the card, top-markets and the list;
 * the era filter applies to each market's newest row). One statement that joined the rows and the marks
 * and computed eighteen aggregates cost the engine several times more to plan than to read.
 */
export async function readCareer(
  store: Store,
  wallet: string,
  includeV1: boolean,
  sources: ReadSources = plainSources(store),
): Promise<CareerStatistics> {
  const { markets, marks } = await sources.walletMarkets(wallet);
  return foldCareer(
    markets.filter((row) => includeV1 || row.era === 'v2'),
    new Map(marks.map((row) => [row.condition_id, { mark: row.mark, marked_at: row.marked_at }])),
  );
}

/**
 * Every career figure from the wallet's market rows (in the card's era) and the marks of its open
 * markets. Holdings at the mark: token 1 at `mark`, token 2 at `1 − mark`; an unmarked open market
 * counts with its cash flow only. No rows: the zeroed career of a wallet never seen.
 */
function foldCareer(rows: readonly CareerMarketRow[], marks: ReadonlyMap<string, Mark>): CareerStatistics {
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
  winrate: z
    .number()
    .min(0)
    .max(1)
    .nullable()
    .meta({ description: 'Share of resolved markets won; null when nothing has resolved.' }),
  volume_usd: z.number(),
  first_seen: z.int().min(0).meta({
    description:
      "The trader's first activity of any kind (a fill, split, merge, redemption or conversion), epoch seconds; 0 for a wallet never seen.",
  }),
  last_seen: z.int().min(0).meta({
    description:
      "The trader's last activity of any kind (a fill, split, merge, redemption or conversion), epoch seconds; a market row's last_traded_at is its last fill only.",
  }),
  avg_entry_price: nullableAverage(
    'Average cost per token across all buys (both outcome sides, token-weighted): the break-even winrate. Missing or null means unavailable (not yet populated), never zero.',
  ),
  avg_win_usd: nullableAverage(
    'Average result of a won resolved market; missing or null means unavailable. An average, not a median.',
  ),
  avg_loss_usd: nullableAverage(
    'Average result of a lost resolved market, served negative; missing or null means unavailable.',
  ),
  open_value_usd: z.number().meta({ description: "Open holdings at each market's last trade." }),
  open_markets: z.int().min(0),
  unmarked_markets: z
    .int()
    .min(0)
    .meta({ description: 'Open markets with no trade mark yet (not in open_value_usd).' }),
  marked_at: z
    .int()
    .nullable()
    .meta({ description: 'Latest mark used for open_value_usd (epoch seconds); null without marks.' }),
  career_pnl_usd: z.number().optional().meta({
    description:
      "Only when upstream is upstream_offline (the provider is unreachable or never reported on this wallet): the archive's realized result over resolved markets (a fallback; quote upstream.pnl when it is there).",
  }),
  coverage: coverageSchema,
  pnl_marked_usd: z.number().optional().meta({
    description:
      'Only when upstream is upstream_offline: realized result plus open markets at their marks (a fallback).',
  }),
});
export type CareerCard = z.infer<typeof careerCardSchema>;

/**
 * The small hand-built world the REST and MCP contract tests share: three markets in three time bands (one
 * won by token 1, one lost by token 2, one open and marked), one trader's fills in them, the markets' prints
 * and the trader's equity from the provider, whose figures the tests work by hand. Each test names its own wallets and markets (a prefix), so that both can run in
 * one store, and adds what only it needs.
 */
import type { EventInputOf } from '../../ingest/contract/topics.ts';
import { BASE_TS, makeConditionId, makeFill, makeMarket, makeTrade, makeWallet } from '../factories.ts';

type Fill = EventInputOf<'fillsArchive'>;
type Trade = EventInputOf<'trades'>;
type Market = ReturnType<typeof makeMarket>;

/** The bands the markets' titles start in, 2,000 s apart: the trader's activity orders them marked, lost, won. */
export const CONTRACT_BANDS = { won: BASE_TS, lost: BASE_TS + 2000, marked: BASE_TS + 4000 } as const;

export interface ContractWorld {
  /** The trader whose figures the tests work by hand. */
  alpha: string;
  won: string;
  lost: string;
  openMarked: string;
  markets: Market[];
  /**
   * Alpha's fills: 100 then 50 token-1 at 0.40 and 0.52 in `won`; 200 token-2 at 0.25 in `lost`, 50 of them
   * sold at 0.30; 80 token-1 at 0.50 in `openMarked`.
   */
  alphaFills: Fill[];
  /**
   * The markets' prints, `seq` 1 to 9 (a test's own prints go on from 10). `won`: Up at 0.41 and, in the
   * same second, a token-2 print at 0.62 (Up at 0.38); then Up at 0.40 and 0.52, and a token-2 print at 0.10
   * (Up at 0.90). `lost`: Up at 0.70 at its band's start and 0.90 a thousand seconds later. `openMarked`:
   * its last print is Up at 0.60 (a token-2 print at 0.40).
   */
  trades: Trade[];
  /** Alpha's equity from the provider, in time order: 10, 50, 30 and 60 USD, 40, 10 and 3 days and one hour before `now`. */
  alphaEquity: EventInputOf<'upstreamEquity'>[];
}

const DAY = 86_400;

/** The world of the tests whose prefix is `prefix`, its equity dated back from `now` (epoch s). */
export function contractWorld(prefix: string, now: number): ContractWorld {
  const band = CONTRACT_BANDS;
  const alpha = makeWallet(`${prefix}-alpha`);
  const [won, lost, openMarked] = ['won', 'lost', 'marked'].map((label) => makeConditionId(`${prefix}-${label}`)) as [
    string,
    string,
    string,
  ];
  const markets = [
    makeMarket({
      condition_id: won,
      title: 'Bitcoin Up or Down - January 4, 3:00PM-3:15PM ET',
      title_start_ts: band.won,
      outcome1: 'Up',
      outcome2: 'Down',
    }),
    makeMarket({
      condition_id: lost,
      title: 'Will it rain in Paris?',
      title_start_ts: band.lost,
      outcome1: 'Yes',
      outcome2: 'No',
    }),
    makeMarket({
      condition_id: openMarked,
      title: 'Ducks vs. Wild',
      title_start_ts: band.marked,
      outcome1: 'Ducks',
      outcome2: 'Wild',
    }),
  ];
  const fill = (
    condition_id: string,
    side: 'BUY' | 'SELL',
    token_side: 1 | 2,
    price: number,
    size_tokens: number,
    usd: number,
    ts: number,
  ): Fill => makeFill({ wallet: alpha, condition_id, side, token_side, price, size_tokens, usd, ts });
  const alphaFills = [
    fill(won, 'BUY', 1, 0.4, 100, 40, band.won + 100),
    fill(won, 'BUY', 1, 0.52, 50, 26, band.won + 300),
    fill(lost, 'BUY', 2, 0.25, 200, 50, band.lost + 50),
    fill(lost, 'SELL', 2, 0.3, 50, 15, band.lost + 950),
    fill(openMarked, 'BUY', 1, 0.5, 80, 40, band.marked + 10),
  ];
  let seq = 0;
  const trade = (conditionId: string, ts: number, tokenSide: 1 | 2, price: number): Trade =>
    makeTrade({ condition_id: conditionId, ts, token_side: tokenSide, price, seq: ++seq });
  const trades = [
    trade(won, band.won + 12, 1, 0.41),
    trade(won, band.won + 12, 2, 0.62),
    trade(won, band.won + 100, 1, 0.4),
    trade(won, band.won + 300, 1, 0.52),
    trade(won, band.won + 640, 2, 0.1),
    trade(lost, band.lost, 1, 0.7),
    trade(lost, band.lost + 1000, 1, 0.9),
    trade(openMarked, band.marked + 5, 1, 0.55),
    trade(openMarked, band.marked + 20, 2, 0.4),
  ];
  const alphaEquity = [
    { wallet: alpha, ts: now - 40 * DAY, pnl_usd: 10 },
    { wallet: alpha, ts: now - 10 * DAY, pnl_usd: 50 },
    { wallet: alpha, ts: now - 3 * DAY, pnl_usd: 30 },
    { wallet: alpha, ts: now - 3600, pnl_usd: 60 },
  ];
  return { alpha, won, lost, openMarked, markets, alphaFills, trades, alphaEquity };
}

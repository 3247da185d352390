/**
 * The small hand-built world the REST and MCP contract tests share: three markets in three time bands (one
 * won by token 1, one lost by token 2, one open and marked) and one trader's fills in them, whose figures
 * the tests work by hand. Each test names its own wallets and markets (a prefix), so that both can run in
 * one store, and adds what only it needs.
 */
import type { EventInputOf } from '../../ingest/contract/topics.ts';
import { BASE_TS, makeConditionId, makeFill, makeMarket, makeWallet } from '../factories.ts';

type Fill = EventInputOf<'fillsArchive'>;
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
}

export function contractWorld(prefix: string): ContractWorld {
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
  return { alpha, won, lost, openMarked, markets, alphaFills };
}

/**
 * What the upstream provider says, on fixed schedules of absolute time: profiles every hour, equity
 * points every 15 minutes, a heartbeat every minute (with one outage of a few minutes per UTC day, when
 * the provider says nothing else), and its leaderboard of the famous traders every three minutes. The
 * provider knows no live watchers: those are the live plane's sessions (operations/gates/slots.ts).
 */
import { standingOf, type TraderLedger } from './accounting.ts';
import { keyOf } from './random.ts';
import type { EventOutput } from './output.ts';
import type { SimulatedTrader } from './traders.ts';

const PROFILE_INTERVAL = 3_600;
const EQUITY_INTERVAL = 900;
const STATUS_INTERVAL = 60;
const LEADERBOARD_INTERVAL = 180;
const DAY = 86_400;

interface Outage {
  startTs: number;
  endTs: number;
}

/** The one outage of the UTC day containing `ts`: 3 to 8 minutes, starting on a minute. */
function outageOfDay(seed: number, ts: number): Outage {
  const day = Math.floor(ts / DAY);
  const key = keyOf(seed, 'outage', day);
  const startTs = day * DAY + (key % (24 * 60 - 10)) * 60;
  return { startTs, endTs: startTs + (3 + ((key >>> 16) % 6)) * 60 };
}

export function isUpstreamOffline(seed: number, ts: number): boolean {
  const outage = outageOfDay(seed, ts);
  return ts >= outage.startTs && ts < outage.endTs;
}

/** Money as the provider states it: to the micro-dollar, without float noise. */
function money(usd: number): number {
  return Math.round(usd * 1e6) / 1e6;
}

export interface UpstreamWorld {
  seed: number;
  genesisTs: number;
  traders: readonly SimulatedTrader[];
  ledgers: readonly TraderLedger[];
}

/**
 * Everything the upstream publishes at second `ts`, from the books as they stand before anything of
 * that second happens. The start of the simulated period also gets a profile, an equity point and a
 * leaderboard, so a card has its upstream block and the shelf its members from the first second on.
 */
export function publishUpstream(world: UpstreamWorld, ts: number, out: EventOutput): void {
  const atGenesis = ts === world.genesisTs;
  const offline = isUpstreamOffline(world.seed, ts);
  if (ts % STATUS_INTERVAL === 0) {
    out.status({
      ts,
      state: offline ? 'offline' : 'online',
      detail: offline ? 'upstream unreachable (simulated outage)' : '',
    });
  }
  if (!offline && (atGenesis || ts % PROFILE_INTERVAL === 0)) {
    for (const trader of world.traders) {
      const standing = standingOf(world.ledgers[trader.index]!);
      out.profile({
        wallet: trader.wallet,
        name: trader.name,
        profile_image: trader.profileImage,
        pnl: money(standing.pnl),
        pnl_realized: money(standing.pnlRealized),
        pnl_unrealized: money(standing.pnlUnrealized),
        portfolio_value: money(standing.portfolioValue),
        as_of: ts,
      });
    }
  }
  if (!offline && (atGenesis || ts % EQUITY_INTERVAL === 0)) {
    for (const trader of world.traders) {
      out.equity({ wallet: trader.wallet, ts, pnl_usd: money(standingOf(world.ledgers[trader.index]!).pnl) });
    }
  }
  if (!offline && (atGenesis || ts % LEADERBOARD_INTERVAL === 0)) {
    // The board the real poller reads by default: the week's, by profit (the simulator keeps no volume).
    const board = world.traders
      .filter((trader) => trader.onBoard)
      .map((trader) => ({ trader, pnl: money(standingOf(world.ledgers[trader.index]!).pnl) }))
      .sort((left, right) => right.pnl - left.pnl || left.trader.index - right.trader.index);
    board.forEach(({ trader, pnl }, index) => {
      out.leaderboard({
        period: 'WEEK',
        metric: 'PNL',
        as_of: ts,
        rank: index + 1,
        wallet: trader.wallet,
        name: trader.name,
        profile_image: trader.profileImage,
        pnl,
        vol: 0,
      });
    });
  }
}

/**
 * What the upstream provider says, on fixed schedules of absolute time: profiles every hour, equity
 * points every 15 minutes, a heartbeat every minute (with one outage of a few minutes per UTC day, when
 * the provider says nothing else), and watcher counts of the popular traders every three minutes.
 */
import { standingOf, type TraderLedger } from './accounting.ts';
import { keyOf, unitOf } from './random.ts';
import type { EventOutput } from './output.ts';
import type { SimulatedTrader } from './traders.ts';

const PROFILE_INTERVAL = 3_600;
const EQUITY_INTERVAL = 900;
const STATUS_INTERVAL = 60;
const WATCHERS_INTERVAL = 180;
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
 * watcher count, so a card has its upstream block from the first second on.
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
  if (atGenesis || ts % WATCHERS_INTERVAL === 0) {
    for (const trader of world.traders) {
      if (trader.watchersBase > 0)
        out.watchers({ wallet: trader.wallet, watching: watchersAt(world.seed, trader, ts), ts });
    }
  }
}

/** Watchers follow the time of day, with noise per three-minute slot. */
function watchersAt(seed: number, trader: SimulatedTrader, ts: number): number {
  const phase = unitOf(keyOf(seed, 'watch-phase', trader.index)) * 2 * Math.PI;
  const daily = 0.75 + 0.25 * Math.sin((2 * Math.PI * (ts % DAY)) / DAY + phase);
  const noise = 0.85 + 0.3 * unitOf(keyOf(seed, 'watch', trader.index, Math.floor(ts / WATCHERS_INTERVAL)));
  return Math.max(0, Math.round(trader.watchersBase * daily * noise));
}

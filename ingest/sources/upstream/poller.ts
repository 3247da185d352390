/**
 * The upstream poller: what the `upstream` role runs. Each `tick` does what is due, within the HTTP
 * client's rate limits:
 *
 * - a heartbeat (`upstream.status`) every `heartbeatSeconds`: online while the circuit breaker is closed
 *   (a cheap probe, the data API's `/ok`, when nothing else reached the provider since the last one);
 *   offline at once when the breaker opens, online again when it closes;
 * - the Gamma markets sweep every `marketsEverySeconds`: `/markets/keyset` newest-updated first, page by
 *   page (keyset cursor), until it reaches markets no newer than the last finished sweep's high-water
 *   mark: new and changed markets only, after a first full sweep; and the same sweep of `/events/keyset`
 *   (each event's markets, with the event's tags and negRisk), with its own cursor and high-water mark;
 * - the leaderboard (the popular shelf) every `leaderboardEverySeconds`;
 * - tracked wallets, each every `walletEverySeconds`: profile (all-time leaderboard row, `/value`,
 *   `/positions`), equity (user-pnl), and its new `/activity` rows (fills, legs, trade prints).
 *
 * Tracked wallets: the leaderboard's, the ones clients asked about (RequestedWallets), and the ones
 * with recent archive activity, at most `maxWallets` (in that order of priority).
 *
 * Every cursor and schedule is saved after each step (StateStore), so a restart resumes. Publishing the
 * same observation again is harmless: events have stable ids (markets by version = Gamma's updatedAt,
 * fills by transaction and row, equity by (wallet, t), profiles by (wallet, as_of)).
 */
import type { UpstreamConfig } from '../../../config.ts';
import type { Logger } from '../../../log.ts';
import { watchLoop, type LoopWatch } from '../../../metrics/progress.ts';
import type { FillEvent, MarketEvent, PositionLegEvent, TradeEvent } from '../../contract/events.ts';
import type { EventSink } from '../../publisher.ts';
import { MarketCatalog, marketMetadata } from '../polymarket/markets.ts';
import { UpstreamError, type Clock, type UpstreamHttpClient, type UpstreamResponse } from './http-client.ts';
import {
  dataApiPage,
  epochOf,
  gammaEventsPage,
  gammaMarketsPage,
  mapActivityRows,
  mapEquity,
  mapGammaEvent,
  mapGammaMarket,
  mapLeaderboard,
  mapProfile,
  type MappedMarket,
  type Rejection,
} from './mapping.ts';
import type { RequestedWallets } from './requests.ts';
import type { PollerState, StateStore } from './state.ts';

export interface RejectionReport extends Rejection {
  /** The request whose answer held it. */
  origin: string;
}

export interface PollerDeps {
  http: UpstreamHttpClient;
  sink: EventSink;
  state: StateStore;
  config: UpstreamConfig;
  clock: Clock;
  log: Logger;
  requested: RequestedWallets;
  /** Wallets with archive fills since `sinceSeconds`, most recent first. */
  activeWallets?: (sinceSeconds: number, limit: number) => Promise<string[]>;
  /** Bad upstream data, with its reason (the role publishes these to the dead-letter topic). */
  reject: (report: RejectionReport) => Promise<void>;
  /** Wallets watched or followed on the live plane now, on every instance: the fast path polls their /activity. */
  watched?: () => Promise<readonly string[]>;
}

/** Pages of a sweep, wallets of a refresh, per tick: keeps heartbeats flowing during a long first sweep. */
const PAGES_PER_TICK = 20;
const WALLETS_PER_TICK = 25;
const GAMMA_PAGE = 100;
const ACTIVITY_PAGE = 500;
/** The data API refuses offsets past 10,000 (its export cap): a longer backlog waits for the next refresh from the newest seen. */
const MAX_ACTIVITY_OFFSET = 10_000;
/** After a failed step, wait this long before the step again (the breaker governs the provider as a whole). */
const RETRY_STEP_S = 30;
/**
 * Heartbeat periods without a finished request's page, wallet, step or tick after which the loop counts as
 * stalled (/healthz 503): one request may retry with backoff for a while, never for this long.
 */
const STALLED_AFTER_HEARTBEATS = 5;
/** Archive activity that makes a wallet tracked. */
const ACTIVE_WINDOW_S = 7 * 86_400;

/** A Gamma listing the poller sweeps: its keyset route, how a page reads, what an item maps to. */
interface GammaCatalog {
  state: 'markets' | 'events';
  path: string;
  page: (body: unknown) => { items: unknown[]; nextCursor: string | null } | undefined;
  map: (item: unknown) => MappedMarket;
}

const MARKETS: GammaCatalog = {
  state: 'markets',
  path: '/markets/keyset',
  page: (body) => {
    const page = gammaMarketsPage(body);
    return page && { items: page.markets, nextCursor: page.nextCursor };
  },
  map: (market) => mapGammaMarket(market),
};

/** Events nest their markets with the event's tags (the category) and negRisk, which a market read alone lacks. */
const EVENTS: GammaCatalog = {
  state: 'events',
  path: '/events/keyset',
  page: (body) => {
    const page = gammaEventsPage(body);
    return page && { items: page.events, nextCursor: page.nextCursor };
  },
  map: (event) => mapGammaEvent(event),
};

export interface TickReport {
  heartbeat: 'online' | 'offline' | null;
  marketPages: number;
  eventPages: number;
  walletsRefreshed: number;
  /** Watched wallets whose new activity the fast path polled. */
  watchedPolled: number;
  leaderboard: boolean;
  errors: string[];
}

/**
 * The fast path's share of the data API: a token bucket refilled at `share` of the poller's rate there (the
 * published limit times rateFraction), holding one second of it. A request of the fast path takes a token;
 * without one the fast path waits for the next tick, and the slow refreshes keep the rest of the budget.
 */
class WatchedBudget {
  private tokens: number;
  private at: number | undefined;
  readonly perSecond: number;

  constructor(config: UpstreamConfig) {
    const data = config.limits.find((limit) => limit.service === 'data' && limit.path === '');
    const dataPerSecond = data ? data.requests / data.perSeconds : 1;
    this.perSecond = dataPerSecond * config.rateFraction * config.watched.share;
    this.tokens = this.perSecond;
  }

  take(nowMs: number): boolean {
    if (this.at !== undefined)
      this.tokens = Math.min(this.perSecond, this.tokens + ((nowMs - this.at) / 1000) * this.perSecond);
    this.at = nowMs;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

const WALLET = /^0x[0-9a-f]{40}$/;

export class UpstreamPoller {
  private state: PollerState | undefined;
  /** The fast path's cursor (newest row seen) and next poll of each watched wallet: this process's own. */
  private readonly watchedCursors = new Map<string, { from: number; nextAt: number }>();
  private readonly watchedBudget: WatchedBudget;
  private lastHeartbeatAt = 0;
  private lastStatus: 'online' | 'offline' | null = null;
  private readonly described = new Set<string>();
  /** The run loop's progress, as /healthz reads it (metrics/progress.ts). */
  private progress: LoopWatch | undefined;

  constructor(private readonly deps: PollerDeps) {
    this.watchedBudget = new WatchedBudget(deps.config);
  }

  private nowSeconds(): number {
    return Math.floor(this.deps.clock.now() / 1000);
  }

  async loadState(): Promise<PollerState> {
    this.state ??= await this.deps.state.load();
    return this.state;
  }

  private async save(): Promise<void> {
    if (this.state) await this.deps.state.save(this.state);
  }

  /** Publishes a status now (the breaker changed, or a heartbeat is due). */
  async publishStatus(state: 'online' | 'offline', detail: string): Promise<void> {
    const ts = this.nowSeconds();
    await this.deps.sink.publish('upstreamStatus', [{ ts, state, detail: detail.slice(0, 1000) }]);
    this.lastHeartbeatAt = ts;
    this.lastStatus = state;
  }

  /** A method, not a narrowed property read: the breaker changes state while a tick awaits. */
  private breakerOpen(): boolean {
    return this.deps.http.breaker.state === 'open';
  }

  private online(): boolean {
    return this.deps.http.breaker.state === 'closed';
  }

  private async heartbeat(report: TickReport): Promise<void> {
    const now = this.nowSeconds();
    const due = now - this.lastHeartbeatAt >= this.deps.config.heartbeatSeconds;
    const breakerState = this.deps.http.breaker.state;
    // Half-open: the cool-down is over, one probe decides. Otherwise, at a due heartbeat, ask the provider
    // (its health route) when nothing reached it for half a heartbeat period.
    const quiet = this.deps.clock.now() - this.deps.http.lastAnswerAt >= (this.deps.config.heartbeatSeconds * 1000) / 2;
    if (breakerState === 'half-open' || (due && breakerState === 'closed' && quiet)) {
      await this.deps.http
        .getJson('data', '/ok', {}, undefined, false)
        .catch((error: unknown) => report.errors.push(`probe: ${(error as Error).message}`));
    }
    const online = this.online();
    const state = online ? 'online' : 'offline';
    if (!due && this.lastStatus === state) return;
    await this.publishStatus(
      state,
      online ? '' : `provider unreachable: circuit open (${report.errors.at(-1) ?? 'repeated failures'})`,
    );
    report.heartbeat = state;
  }

  private async rejected(origin: string, rejections: readonly Rejection[]): Promise<void> {
    for (const rejection of rejections) {
      this.deps.log.warn({ origin, what: rejection.what, reason: rejection.reason }, 'upstream data rejected');
      await this.deps.reject({ ...rejection, origin });
    }
  }

  /** One tick: whatever is due. Never throws for the provider's sake (errors are in the report). */
  async tick(): Promise<TickReport> {
    const report: TickReport = {
      heartbeat: null,
      marketPages: 0,
      eventPages: 0,
      walletsRefreshed: 0,
      watchedPolled: 0,
      leaderboard: false,
      errors: [],
    };
    await this.loadState();
    await this.heartbeat(report);
    if (this.breakerOpen()) return report;
    const steps: [string, () => Promise<void>][] = [
      // First: a watcher waits on it, and the sweeps' pages per tick are bounded behind it.
      ['watched', () => this.pollWatched(report)],
      ['markets', () => this.sweep(MARKETS, report)],
      ['events', () => this.sweep(EVENTS, report)],
      ['leaderboard', () => this.leaderboard(report)],
      ['wallets', () => this.refreshWallets(report)],
    ];
    for (const [name, step] of steps) {
      try {
        await step();
        this.progress?.advanced();
      } catch (error) {
        if (!(error instanceof UpstreamError)) throw error;
        report.errors.push(`${name}: ${error.message}`);
        this.deps.log.warn({ step: name, err: { message: error.message } }, 'upstream step failed');
      }
      if (this.breakerOpen()) break;
    }
    await this.save();
    // The breaker may have opened during the tick: say so now rather than at the next heartbeat.
    await this.heartbeat(report);
    return report;
  }

  // ---------------------------------------------------------------------------------------------------

  /**
   * One Gamma sweep (markets or events), a page at a time, newest-updated first: what changed since the
   * last finished sweep is published, then the sweep is done until its next period.
   */
  private async sweep(catalog: GammaCatalog, report: TickReport): Promise<void> {
    const state = this.state![catalog.state];
    const now = this.nowSeconds();
    if (now < state.nextAt) return;
    for (let page = 0; page < PAGES_PER_TICK; page += 1) {
      const query = { limit: GAMMA_PAGE, order: 'updatedAt', ascending: false, cursor: state.cursor ?? undefined };
      let answer: UpstreamResponse;
      try {
        answer = await this.deps.http.getJson('gamma', catalog.path, query);
      } catch (error) {
        state.nextAt = now + RETRY_STEP_S;
        // A refused cursor (expired, or the provider changed its paging) will not work later either: start over.
        if (
          error instanceof UpstreamError &&
          error.status !== undefined &&
          error.status >= 400 &&
          error.status < 500 &&
          error.status !== 429
        )
          state.cursor = null;
        throw error;
      }
      const parsed = catalog.page(answer.body);
      if (parsed === undefined) {
        await this.rejected(answer.url, [
          {
            what: `gamma ${catalog.state} page`,
            reason: `not a ${catalog.state} page ({${catalog.state}, next_cursor} or an array)`,
            raw: answer.body,
          },
        ]);
        state.cursor = null;
        state.nextAt = now + RETRY_STEP_S;
        return;
      }
      const events: MarketEvent[] = [];
      const rejections: Rejection[] = [];
      let newest = 0;
      for (const item of parsed.items) {
        const updatedAt =
          typeof item === 'object' && item !== null ? (epochOf((item as { updatedAt?: unknown }).updatedAt) ?? 0) : 0;
        newest = Math.max(newest, updatedAt);
        state.sweepMax = Math.max(state.sweepMax, updatedAt);
        // Known territory: published by an earlier sweep, unchanged since.
        if (updatedAt > 0 && updatedAt <= state.highWater) continue;
        const mapped = catalog.map(item);
        events.push(...mapped.events);
        rejections.push(...mapped.rejected);
      }
      if (events.length > 0) await this.deps.sink.publish('markets', events);
      await this.rejected(answer.url, rejections);
      if (catalog.state === 'markets') report.marketPages += 1;
      else report.eventPages += 1;
      this.progress?.advanced();
      // Done at the last page, or at a page with nothing newer than the last finished sweep (newest-updated
      // first, every later page is older still; a whole page is required, in case the order is only roughly kept).
      const finished = parsed.nextCursor === null || parsed.items.length === 0 || newest <= state.highWater;
      if (finished) {
        state.highWater = Math.max(state.highWater, state.sweepMax);
        state.sweepMax = 0;
        state.cursor = null;
        state.nextAt = now + this.deps.config.marketsEverySeconds;
      } else {
        state.cursor = parsed.nextCursor;
      }
      await this.save();
      if (finished) return;
    }
  }

  private async leaderboard(report: TickReport): Promise<void> {
    const state = this.state!.leaderboard;
    const now = this.nowSeconds();
    if (now < state.nextAt) return;
    const board = this.deps.config.leaderboard;
    let answer: UpstreamResponse;
    try {
      answer = await this.deps.http.getJson('data', '/v1/leaderboard', {
        timePeriod: board.timePeriod,
        orderBy: board.orderBy,
        limit: board.size,
        offset: 0,
        category: 'overall',
      });
    } catch (error) {
      state.nextAt = now + RETRY_STEP_S;
      throw error;
    }
    const { rows, rejected } = mapLeaderboard(answer.body, {
      period: board.timePeriod,
      metric: board.orderBy,
      asOf: now,
    });
    if (rows.length > 0) await this.deps.sink.publish('upstreamLeaderboard', rows);
    await this.rejected(answer.url, rejected);
    state.wallets = rows.map((row) => row.wallet);
    state.nextAt = now + this.deps.config.leaderboardEverySeconds;
    report.leaderboard = true;
    await this.save();
  }

  /** The tracked wallets in priority order: leaderboard, requested, recently active in the archive. */
  async trackedWallets(): Promise<string[]> {
    const now = this.nowSeconds();
    const limit = this.deps.config.maxWallets;
    const tracked = new Set<string>(this.state!.leaderboard.wallets);
    for (const wallet of await this.deps.requested.recent(now - this.deps.config.requestTtlSeconds, limit))
      tracked.add(wallet.toLowerCase());
    if (this.deps.activeWallets && tracked.size < limit) {
      for (const wallet of await this.deps.activeWallets(now - ACTIVE_WINDOW_S, limit))
        tracked.add(wallet.toLowerCase());
    }
    return [...tracked].filter((wallet) => WALLET.test(wallet)).slice(0, limit);
  }

  private async refreshWallets(report: TickReport): Promise<void> {
    const now = this.nowSeconds();
    const tracked = await this.trackedWallets();
    const wallets = this.state!.wallets;
    // Forget wallets no longer tracked (their schedules would only grow the state).
    const keep = new Set(tracked);
    for (const wallet of Object.keys(wallets)) if (!keep.has(wallet)) delete wallets[wallet];
    const due = tracked.filter((wallet) => (wallets[wallet]?.nextAt ?? 0) <= now).slice(0, WALLETS_PER_TICK);
    for (const wallet of due) {
      try {
        await this.refreshWallet(wallet, now);
        report.walletsRefreshed += 1;
        this.progress?.advanced();
      } catch (error) {
        if (!(error instanceof UpstreamError)) throw error;
        // This wallet again in a while; the others go on (one wallet's bad answer is not the provider's outage).
        wallets[wallet] = { nextAt: now + RETRY_STEP_S, activityFrom: wallets[wallet]?.activityFrom ?? 0 };
        report.errors.push(`wallet ${wallet}: ${error.message}`);
        this.deps.log.warn({ wallet, err: { message: error.message } }, 'upstream wallet refresh failed');
      }
      await this.save();
      if (this.breakerOpen()) return;
    }
  }

  /**
   * The fast path: each watched (or followed) wallet's /activity since the newest row seen, every `watched.everySeconds`,
   * the longest-waiting first, while the fast path's tokens last (`WatchedBudget`). Its cursors are this
   * process's own: a restart polls again from the tracked wallet's cursor, or from one slow period back,
   * and the repeated rows are the same events. A wallet no longer watched nor followed is forgotten.
   */
  private async pollWatched(report: TickReport): Promise<void> {
    if (!this.deps.watched) return;
    const nowMs = this.deps.clock.now();
    const now = Math.floor(nowMs / 1000);
    const watched = new Set(
      (await this.deps.watched()).map((wallet) => wallet.toLowerCase()).filter((wallet) => WALLET.test(wallet)),
    );
    for (const wallet of this.watchedCursors.keys()) if (!watched.has(wallet)) this.watchedCursors.delete(wallet);
    const due = [...watched]
      .map((wallet) => ({ wallet, nextAt: this.watchedCursors.get(wallet)?.nextAt ?? 0 }))
      .filter(({ nextAt }) => nextAt <= now)
      .sort((a, b) => a.nextAt - b.nextAt || (a.wallet < b.wallet ? -1 : 1));
    for (const { wallet } of due) {
      if (!this.watchedBudget.take(nowMs)) return;
      const cursor = this.watchedCursors.get(wallet);
      const from =
        cursor?.from || this.state!.wallets[wallet]?.activityFrom || now - this.deps.config.walletEverySeconds;
      try {
        const newest = await this.pollActivity(wallet, from, () => this.watchedBudget.take(this.deps.clock.now()));
        this.watchedCursors.set(wallet, { from: newest, nextAt: now + this.deps.config.watched.everySeconds });
        report.watchedPolled += 1;
      } catch (error) {
        if (!(error instanceof UpstreamError)) throw error;
        this.watchedCursors.set(wallet, { from, nextAt: now + this.deps.config.watched.everySeconds });
        report.errors.push(`watched ${wallet}: ${error.message}`);
      }
      if (this.breakerOpen()) return;
    }
  }

  /** Profile, equity and new activity of one wallet. */
  async refreshWallet(wallet: string, now: number): Promise<void> {
    const http = this.deps.http;
    const [board, value, positions, pnl] = [
      await http.getJson('data', '/v1/leaderboard', { timePeriod: 'ALL', orderBy: 'PNL', user: wallet, limit: 1 }),
      await http.getJson('data', '/value', { user: wallet }),
      await http.getJson('data', '/positions', { user: wallet, limit: ACTIVITY_PAGE, sizeThreshold: 0 }),
      await http.getJson('pnl', '/user-pnl', { user_address: wallet, interval: 'all', fidelity: '1d' }),
    ];
    const positionRows = dataApiPage(positions.body)?.rows ?? [];
    const profile = mapProfile({
      wallet,
      leaderboard: board.body,
      value: value.body,
      positions: positionRows,
      asOf: now,
    });
    await this.rejected(`${board.url} ${value.url} ${positions.url}`, profile.rejected);
    if (profile.profile) await this.deps.sink.publish('upstreamProfiles', [profile.profile]);
    const equity = mapEquity(wallet, pnl.body);
    if (equity.points.length > 0) await this.deps.sink.publish('upstreamEquity', equity.points);
    await this.rejected(pnl.url, equity.rejected);

    const activityFrom = await this.pollActivity(wallet, this.state!.wallets[wallet]?.activityFrom ?? 0);
    this.state!.wallets[wallet] = { nextAt: now + this.deps.config.walletEverySeconds, activityFrom };
  }

  /**
   * New /activity rows since `from` (inclusive; repeats are the same events); returns the newest timestamp
   * seen. `nextPage` says whether a further page may be asked for now (the fast path's budget).
   */
  private async pollActivity(wallet: string, from: number, nextPage: () => boolean = () => true): Promise<number> {
    let newest = from;
    let cursor: string | null = null;
    for (let offset = 0; offset <= MAX_ACTIVITY_OFFSET; offset += ACTIVITY_PAGE) {
      if (offset > 0 && !nextPage()) break;
      const query = {
        user: wallet,
        limit: ACTIVITY_PAGE,
        sortBy: 'TIMESTAMP',
        sortDirection: 'ASC',
        start: from > 0 ? from : undefined,
        ...(cursor === null ? { offset } : { cursor }),
      };
      const answer = await this.deps.http.getJson('data', '/activity', query);
      const page = dataApiPage(answer.body);
      if (page === undefined) {
        await this.rejected(answer.url, [
          { what: 'activity page', reason: 'not a list of rows nor a {data, pagination} envelope', raw: answer.body },
        ]);
        break;
      }
      const mapped = mapActivityRows(page.rows, this.deps.config.v2StartTs, 'activity');
      await this.rejected(answer.url, mapped.rejected);
      await this.publishActivity(mapped.parsed);
      for (const row of mapped.parsed) newest = Math.max(newest, row.kind === 'fill' ? row.fill.ts : row.leg.ts);
      if (page.nextCursor !== null) cursor = page.nextCursor;
      else if (page.hasMore || (cursor === null && page.rows.length === ACTIVITY_PAGE)) cursor = null;
      else break;
    }
    return newest;
  }

  private async publishActivity(parsed: ReturnType<typeof mapActivityRows>['parsed']): Promise<void> {
    const catalog = new MarketCatalog();
    for (const row of parsed) catalog.observe(row.market);
    const metadata: MarketEvent[] = [];
    for (const row of parsed) {
      const id = row.market.conditionId;
      if (this.described.has(id)) continue;
      this.described.add(id);
      const facts = catalog.facts(id);
      // Version 0: what an activity row says of its market never overrides Gamma's metadata (versioned by updatedAt).
      if (facts) metadata.push({ ...marketMetadata(facts), version: 0 });
    }
    const fills: FillEvent[] = [];
    const trades: TradeEvent[] = [];
    const legs: PositionLegEvent[] = [];
    for (const row of parsed) {
      if (row.kind === 'fill') {
        fills.push(row.fill);
        trades.push(row.trade);
      } else {
        legs.push(row.leg);
      }
    }
    if (metadata.length > 0) await this.deps.sink.publish('markets', metadata);
    if (fills.length > 0) await this.deps.sink.publish('fillsUpstream', fills);
    if (legs.length > 0) await this.deps.sink.publish('positions', legs);
    if (trades.length > 0) await this.deps.sink.publish('trades', trades);
  }

  /** Ticks until aborted, a second apart (every step is scheduled; a tick with nothing due is cheap). */
  async run(signal: AbortSignal, tickMs = 1000): Promise<void> {
    this.progress = watchLoop(
      'upstream poller',
      STALLED_AFTER_HEARTBEATS * this.deps.config.heartbeatSeconds * 1000,
      () => this.deps.clock.now(),
    );
    try {
      await this.runLoop(signal, tickMs);
    } finally {
      this.progress.stop();
    }
  }

  private async runLoop(signal: AbortSignal, tickMs: number): Promise<void> {
    await this.loadState();
    while (!signal.aborted) {
      const report = await this.tick();
      this.progress?.advanced();
      // A tick that did something says what (a tick with nothing due says nothing).
      if (
        report.heartbeat !== null ||
        report.marketPages > 0 ||
        report.eventPages > 0 ||
        report.walletsRefreshed > 0 ||
        report.watchedPolled > 0 ||
        report.leaderboard ||
        report.errors.length > 0
      ) {
        this.deps.log.info({ ...report }, 'upstream tick');
      }
      await this.deps.clock.sleep(tickMs, signal).catch(() => undefined);
    }
    await this.save();
  }
}

/**
 * Every cached read of the API, in one place: the policies (what is kept, under which arguments, how long,
 * until what changes) and one read per policy. Operations read through a Reader; projections/ stays plain
 * (SQL and folds), and reads what it combines through the Reader's sources (projections/sources.ts).
 *
 * Lifetimes follow the contract: a resolved market's answer never changes (immutable, strong ETag) and is
 * kept until evicted; an open one at most `openMarketSeconds`, never longer than its Cache-Control max-age.
 * Answers about a trader are kept only while this process's ingest worker tells every change of the store
 * (an embedded store, role `all`): until a notice names the trader, and at most `traderAnswerSeconds`,
 * since the marks inside them move with other traders' trades. Without a feed (role `api`, a server store)
 * names live 10 s, reports a second, market answers as above, and answers about traders are read every
 * time. Why each is kept is measured in test/bench/RESULTS.md.
 */
import type { Config } from '../config.ts';
import { readArchiveRanges } from '../projections/coverage.ts';
import { readMarketNames, NO_MARKET_NAMES, type MarketNames } from '../projections/market-names.ts';
import { readMarketSummaryAndMarket } from '../projections/market-summary.ts';
import { readTraderMarkets } from '../projections/market-list.ts';
import type { MarketListPosition, TraderMarketDetail } from '../projections/market-schemas.ts';
import { traderMarketResolved, type MarketTimes, type TraderMarket } from '../projections/market-parts.ts';
import { readTraderFills, type FillPosition } from '../projections/fills.ts';
import {
  readFullTape,
  readSampledChart,
  readTraderMarket,
  type ChartLimits,
  type ChartRequest,
} from '../projections/prices.ts';
import type { ReadSources } from '../projections/sources.ts';
import type { Store } from '../projections/store.ts';
import { readTraderName } from '../projections/traders.ts';
import { readUpstreamHistory, readUpstreamReport, type UpstreamHistory } from '../projections/upstream-history.ts';
import {
  readMarks,
  readWalletMarketRows,
  type WalletMark,
  type WalletMarketRow,
  type WalletMarkets,
} from '../projections/wallet-markets.ts';
import { readWhaleFlow, type WhaleFlow, type WhaleFlowRequest } from '../projections/whales.ts';
import { changeFeedOf } from '../projections/changes.ts';
import { readUpstreamHistoryAsOf, readWalletMarketsAsOf } from '../projections/as-of.ts';
import {
  priorOf,
  readSkillInputsAsOf,
  readSkillMarkets,
  readSkillPopulation,
  skillBoardOf,
  type SkillBoard,
  type SkillInputs,
  type SkillPrior,
} from '../projections/skill.ts';
import { ReadCache, RefreshAhead, type Policy, type ReadCacheOptions } from './read-cache.ts';

type Lifetimes = Config['api']['readCache'];

/** A name is reused this long without a feed (a rename shows within it), and at most this long with one. */
const NAME_SECONDS = 10;
const FOLLOWED_NAME_SECONDS = 600;
/** The provider's rows of a wallet change when it reports again (hourly profiles): kept until then, at most this. */
const FOLLOWED_UPSTREAM_SECONDS = 600;
/**
 * The archive's ranges (what the card's coverage is judged from) are written by the archive, not by an
 * ingest worker, so no notice follows them: they are kept this long everywhere. They turn the card's V1
 * coverage on once in a deployment's life, when a backfill reaches the cut-over; a card that says V2 only
 * a little longer is honest, and every other card is spared the read.
 */
const ARCHIVE_RANGES_SECONDS = 60;
/**
 * The skill answer's prior and the skill leaderboard come from every ranked wallet's sums: one sum over the
 * skill rollup's rows per period of this many seconds, shared by the calls that want it meanwhile, and the previous
 * period's served while the next is computed (a prior moves slowly: one trader's new market barely shifts it).
 */
const SKILL_PERIOD_SECONDS = 300;
const SKILL_BOARD_WINDOWS = 8;
/** A whale ranking is computed once per request shape and second; the previous second's is served meanwhile. */
const WHALE_FLOW_SECONDS = 1;
const WHALE_FLOW_SHAPES = 256;
/** Names, marks and reports kept at most: every active trader's and market's. */
const SMALL_ENTRIES = 500_000;

/**
 * The read cache of an API process over `store`: it follows the store's changes when the store is embedded
 * (its worker, if this process runs one, tells every write); a server store is written by others too.
 */
export function readCacheOf(config: Config, store: Store, options: Omit<ReadCacheOptions, 'changes'> = {}): ReadCache {
  return new ReadCache(
    { bytes: config.api.readCache.bytes, smallEntries: SMALL_ENTRIES },
    { ...options, changes: store.kind === 'embedded' ? changeFeedOf(store.database) : undefined },
  );
}

const policy = <T>(definition: Policy<T>): Policy<T> => definition;

function policiesOf(lifetimes: Lifetimes) {
  const openMs = lifetimes.openMarketSeconds * 1000;
  const traderMs = lifetimes.traderAnswerSeconds * 1000;
  return {
    traderName: policy<string>({
      name: 'trader_name',
      memory: 'small',
      follows: 'named',
      followedMs: FOLLOWED_NAME_SECONDS * 1000,
      ttlMs: NAME_SECONDS * 1000,
    }),
    marketNames: policy<MarketNames>({
      name: 'market_names',
      memory: 'small',
      follows: 'markets',
      followedMs: FOLLOWED_NAME_SECONDS * 1000,
      ttlMs: NAME_SECONDS * 1000,
    }),
    // A mark moves with every trade of its market: as old as an open market's answer may be.
    marks: policy<WalletMark | null>({ name: 'marks', memory: 'small', ttlMs: openMs, keepsNull: true }),
    // As of a past instant the rows never change (immutable answers): kept until evicted, like a resolved market's.
    walletMarketsAsOf: policy<WalletMarkets>({ name: 'wallet_markets_as_of', memory: 'traders', resolved: () => true }),
    upstreamHistoryAsOf: policy<UpstreamHistory>({
      name: 'upstream_history_as_of',
      memory: 'traders',
      resolved: () => true,
    }),
    skillInputsAsOf: policy<SkillInputs>({ name: 'skill_inputs_as_of', memory: 'traders', resolved: () => true }),
    // The population as of a past instant never changes either: its prior and each window's board.
    skillPriorAsOf: policy<SkillPrior>({ name: 'skill_prior_as_of', memory: 'markets', resolved: () => true }),
    skillBoardAsOf: policy<SkillBoard>({ name: 'skill_board_as_of', memory: 'markets', resolved: () => true }),
    skillInputs: policy<SkillInputs>({
      name: 'skill_inputs',
      memory: 'traders',
      follows: 'wallets',
      followedMs: traderMs,
    }),
    // Its marks may already be an open answer's age when it is kept: together they stay within the trader's bound.
    walletMarkets: policy<WalletMarkets>({
      name: 'wallet_markets',
      memory: 'traders',
      follows: 'wallets',
      followedMs: traderMs - openMs,
    }),
    marketsPage: policy<Awaited<ReturnType<typeof readTraderMarkets>>>({
      name: 'markets',
      memory: 'traders',
      follows: 'wallets',
      followedMs: traderMs,
    }),
    fillsPage: policy<Awaited<ReturnType<typeof readTraderFills>>>({
      name: 'fills',
      memory: 'traders',
      follows: 'wallets',
      followedMs: traderMs,
    }),
    upstreamHistory: policy<UpstreamHistory>({
      name: 'upstream_history',
      memory: 'traders',
      follows: 'upstream',
      followedMs: traderMs > 0 ? FOLLOWED_UPSTREAM_SECONDS * 1000 : 0,
    }),
    summary: policy<TraderMarketDetail | null>({
      name: 'summary',
      memory: 'markets',
      ttlMs: openMs,
      resolved: (detail) => detail?.market.resolved === true,
    }),
    traderMarket: policy<TraderMarket | null>({
      name: 'trader_market',
      memory: 'markets',
      ttlMs: openMs,
      resolved: traderMarketResolved,
    }),
    // Resolved by what was asked: the chart's last argument says whether its market is.
    chart: policy<Awaited<ReturnType<typeof readSampledChart>>>({
      name: 'chart',
      memory: 'markets',
      ttlMs: openMs,
      resolved: (_chart, args) => args.at(-1) === true,
    }),
    tape: policy<Awaited<ReturnType<typeof readFullTape>>>({
      name: 'tape',
      memory: 'markets',
      ttlMs: openMs,
      resolved: (_tape, args) => args[1] !== 'open',
    }),
  } as const;
}

/** The reads of one API process: the store, and every answer worth keeping kept in `cache`. */
export class Reader {
  readonly #policies: ReturnType<typeof policiesOf>;
  readonly #whaleFlow = new RefreshAhead<WhaleFlow>(WHALE_FLOW_SHAPES, WHALE_FLOW_SECONDS);
  /** Market names being read, by market: a caller that needs one of them waits for that read. */
  readonly #marketNamesReading = new Map<string, Promise<MarketNames | null>>();
  // Ages in periods: the previous period's answer is served while the next is computed.
  readonly #skillPrior = new RefreshAhead<SkillPrior>(1, 1);
  readonly #skillBoards = new RefreshAhead<SkillBoard>(SKILL_BOARD_WINDOWS, 1);
  /** What the projections that combine reads read through. */
  readonly sources: ReadSources;

  constructor(
    readonly store: Store,
    readonly cache: ReadCache,
    lifetimes: Lifetimes,
  ) {
    this.#policies = policiesOf(lifetimes);
    // Facts of the whole store, never read on a call's path once known (KeptFact).
    const upstreamReport = cache.fact('upstream_state', lifetimes.upstreamStateSeconds * 1000, () =>
      readUpstreamReport(this.store),
    );
    const archiveRanges = cache.fact('archive_ranges', ARCHIVE_RANGES_SECONDS * 1000, () =>
      readArchiveRanges(this.store),
    );
    this.sources = {
      walletMarkets: (wallet, onRows) => this.walletMarkets(wallet, onRows),
      walletMarketsAtHand: (wallet) => this.cache.peek(this.#policies.walletMarkets, [wallet]),
      marketNames: (conditionIds) => this.marketNames(conditionIds),
      marketNamesAtHand: (conditionId) => this.#marketNamesAtHand(conditionId),
      upstreamHistory: (wallet) =>
        this.cache.through(this.#policies.upstreamHistory, [wallet], () => readUpstreamHistory(this.store, wallet)),
      upstreamReport: () => upstreamReport.get(),
      archiveRanges: () => archiveRanges.get(),
    };
  }

  traderName(wallet: string): Promise<string> {
    return this.cache.through(this.#policies.traderName, [wallet], () => readTraderName(this.store, wallet));
  }

  /**
   * The skill leaderboard's rows of a window (its markets resolved since `since`, 0: all) at `nowSeconds`,
   * per window and period: the window's start moves with the clock, and a board a period old ranks the same
   * traders. As of a past instant (`asOf`): the rows known then, kept until evicted.
   */
  skillBoard(window: string, since: number, nowSeconds: number, asOf?: number): Promise<SkillBoard> {
    if (asOf !== undefined)
      return this.cache.through(this.#policies.skillBoardAsOf, [window, since, asOf], async () =>
        skillBoardOf(await readSkillPopulation(this.store, { since, asOf })),
      );
    return this.#skillBoards.get(window, Math.floor(nowSeconds / SKILL_PERIOD_SECONDS), async () =>
      skillBoardOf(await readSkillPopulation(this.store, { since })),
    );
  }

  /** A wallet's market rows and marks as of a past instant (projections/as-of.ts): immutable, kept until evicted. */
  walletMarketsAsOf(wallet: string, asOf: number): Promise<WalletMarkets> {
    return this.cache.through(this.#policies.walletMarketsAsOf, [wallet, asOf], () =>
      readWalletMarketsAsOf(this.store, wallet, asOf),
    );
  }

  /** The provider's reports of a wallet up to a past instant (projections/as-of.ts): immutable, kept until evicted. */
  upstreamHistoryAsOf(wallet: string, asOf: number): Promise<UpstreamHistory> {
    return this.cache.through(this.#policies.upstreamHistoryAsOf, [wallet, asOf], () =>
      readUpstreamHistoryAsOf(this.store, wallet, asOf),
    );
  }

  /**
   * The skill answer's sample of a wallet: today's (its skill rollup rows) until a notice names the wallet, a
   * past instant's (its markets then, with its buys then) until evicted.
   */
  skillInputs(wallet: string, asOf?: number): Promise<SkillInputs> {
    if (asOf === undefined)
      return this.cache.through(this.#policies.skillInputs, [wallet], () => readSkillMarkets(this.store, wallet));
    return this.cache.through(this.#policies.skillInputsAsOf, [wallet, asOf], async () =>
      readSkillInputsAsOf(this.store, wallet, (await this.walletMarketsAsOf(wallet, asOf)).markets, asOf),
    );
  }

  /**
   * The skill answers' prior over every ranked wallet (projections/skill.ts): today's per period, or the
   * population known at a past instant (`asOf`), kept until evicted.
   */
  skillPrior(nowSeconds: number, asOf?: number): Promise<SkillPrior> {
    if (asOf !== undefined)
      return this.cache.through(this.#policies.skillPriorAsOf, [asOf], async () =>
        priorOf(await readSkillPopulation(this.store, { asOf })),
      );
    return this.#skillPrior.get('all', Math.floor(nowSeconds / SKILL_PERIOD_SECONDS), async () =>
      priorOf(await readSkillPopulation(this.store)),
    );
  }

  /**
   * Names of some markets (absent: no metadata): the kept ones, those another call is reading from its
   * read, the rest in one read (which later callers of the same markets share while it runs).
   */
  async marketNames(conditionIds: readonly string[]): Promise<Map<string, MarketNames>> {
    const policy = this.#policies.marketNames;
    const names = new Map<string, MarketNames>();
    const missing: string[] = [];
    const shared: Promise<void>[] = [];
    for (const conditionId of new Set(conditionIds)) {
      const kept = this.cache.lookup(policy, [conditionId]);
      const reading = kept ? undefined : this.#marketNamesReading.get(conditionId);
      if (kept) names.set(conditionId, kept.value);
      else if (reading)
        shared.push(
          reading.then((found) => {
            if (found) names.set(conditionId, found);
          }),
        );
      else missing.push(conditionId);
    }
    if (names.size + missing.length + shared.length > 0)
      this.cache.observe(policy, missing.length + shared.length === 0 ? 'hit' : 'miss');
    if (missing.length > 0) {
      const token = this.cache.begin(policy);
      const read = readMarketNames(this.store, missing);
      for (const conditionId of missing) {
        const one = read.then((found) => found.get(conditionId) ?? null);
        this.#marketNamesReading.set(conditionId, one);
        const forget = () => {
          if (this.#marketNamesReading.get(conditionId) === one) this.#marketNamesReading.delete(conditionId);
        };
        one.then(forget, forget);
      }
      const found = await read;
      for (const conditionId of missing) {
        const row = found.get(conditionId);
        if (row) names.set(conditionId, row);
        this.#keepMarketNames(conditionId, row ?? null, token);
      }
    }
    await Promise.all(shared);
    return names;
  }

  /**
   * A market's names if kept, without reading or counting (the live plane's fan-out, which must not wait):
   * undefined when not kept, null when kept as "no metadata".
   */
  marketNamesKept(conditionId: string): MarketNames | null | undefined {
    const kept = this.cache.lookup(this.#policies.marketNames, [conditionId]);
    if (!kept) return undefined;
    return kept.value === NO_MARKET_NAMES ? null : kept.value;
  }

  /** Names a feed brought (the live plane reads the markets topic): kept as a read of them now would be. */
  keepMarketNames(conditionId: string, names: MarketNames): void {
    this.#keepMarketNames(conditionId, names, this.cache.begin(this.#policies.marketNames));
  }

  #marketNamesAtHand(conditionId: string): { names: MarketNames } | { keep(names: MarketNames | null): void } {
    const kept = this.cache.lookup(this.#policies.marketNames, [conditionId]);
    if (kept) return { names: kept.value };
    const token = this.cache.begin(this.#policies.marketNames);
    return { keep: (names) => this.#keepMarketNames(conditionId, names, token) };
  }

  /**
   * "No metadata" is kept only while a feed follows the market (its metadata landing ends it), never on
   * the short lifetime alone: the names may land any moment. A trader's fills often arrive before their
   * markets' names, and every answer naming them would read them again.
   */
  #keepMarketNames(conditionId: string, names: MarketNames | null, token: number | null): void {
    if (names !== null) this.cache.keep(this.#policies.marketNames, [conditionId], names, token);
    else if (token !== null) this.cache.keep(this.#policies.marketNames, [conditionId], NO_MARKET_NAMES, token);
  }

  /** Every market of the wallet and its open markets' marks (the card, top-markets; the list and a summary when at hand). */
  walletMarkets(wallet: string, onRows?: (rows: readonly WalletMarketRow[]) => void): Promise<WalletMarkets> {
    return this.cache.through(this.#policies.walletMarkets, [wallet], () => this.#walletMarketsMarked(wallet, onRows));
  }

  /** The rows alone (told to `onRows`), then the open markets' marks: the kept ones, the rest in one more read. */
  async #walletMarketsMarked(
    wallet: string,
    onRows?: (rows: readonly WalletMarketRow[]) => void,
  ): Promise<WalletMarkets> {
    const policy = this.#policies.marks;
    const markets = await readWalletMarketRows(this.store, wallet);
    onRows?.(markets);
    const marks: WalletMark[] = [];
    const missing: string[] = [];
    for (const row of markets) {
      if (row.resolved) continue;
      const kept = this.cache.lookup(policy, [row.condition_id]);
      if (kept === undefined) missing.push(row.condition_id);
      else if (kept.value !== null) marks.push(kept.value);
    }
    if (missing.length === 0) return { markets, marks };
    const token = this.cache.begin(policy);
    const found = new Map((await readMarks(this.store, missing)).map((row) => [row.condition_id, row]));
    for (const conditionId of missing) {
      const mark = found.get(conditionId) ?? null;
      this.cache.keep(policy, [conditionId], mark, token);
      if (mark) marks.push(mark);
    }
    return { markets, marks };
  }

  marketsPage(
    wallet: string,
    page: { after?: MarketListPosition | undefined; limit: number; historyDepth?: number },
  ): ReturnType<typeof readTraderMarkets> {
    const args = [wallet, page.after ?? null, page.limit, page.historyDepth ?? -1];
    return this.cache.through(this.#policies.marketsPage, args, () =>
      readTraderMarkets(this.store, wallet, page, this.sources),
    );
  }

  fillsPage(
    wallet: string,
    page: { since?: number | undefined; after?: FillPosition | undefined; limit: number; historyDepth?: number },
  ): ReturnType<typeof readTraderFills> {
    const args = [wallet, page.since ?? null, page.after ?? null, page.limit, page.historyDepth ?? -1];
    return this.cache.through(this.#policies.fillsPage, args, () =>
      readTraderFills(this.store, wallet, page, this.sources),
    );
  }

  /** A summary, keeping the trader's market it was built from for the chart or tape that often follows. */
  marketSummary(wallet: string, conditionId: string): Promise<TraderMarketDetail | null> {
    return this.cache.through(this.#policies.summary, [wallet, conditionId], async () => {
      const { detail, traderMarket } = await readMarketSummaryAndMarket(this.store, wallet, conditionId, this.sources);
      this.cache.keep(this.#policies.traderMarket, [wallet, conditionId], traderMarket, null);
      return detail;
    });
  }

  traderMarket(wallet: string, conditionId: string): Promise<TraderMarket | null> {
    return this.cache.through(this.#policies.traderMarket, [wallet, conditionId], () =>
      readTraderMarket(this.store, wallet, conditionId),
    );
  }

  sampledChart(
    wallet: string,
    market: TraderMarket,
    request: ChartRequest,
    limits: ChartLimits,
    nowSeconds: number,
  ): ReturnType<typeof readSampledChart> {
    const { times } = market;
    const resolved = market.header.resolved && times.resolution !== null;
    // The default window depends on the clock only for a market with neither a titled start nor a trade.
    const clock = times.titleStartTs === null && times.firstTradeTs === null ? nowSeconds : null;
    const asked = [request.points, request.fromTs, request.toTs, request.resolution];
    const args = [wallet, times.conditionId, asked, limits, clock, resolved];
    return this.cache.through(this.#policies.chart, args, () =>
      readSampledChart(this.store, wallet, market, request, limits, nowSeconds),
    );
  }

  fullTape(times: MarketTimes): ReturnType<typeof readFullTape> {
    const resolvedAt = times.resolution ? `${times.resolution.winnerTokenSide}@${times.resolution.ts}` : 'open';
    return this.cache.through(this.#policies.tape, [times.conditionId, resolvedAt], () =>
      readFullTape(this.store, times),
    );
  }

  /** The ranking of the request's second; the previous second's while this one is computed. */
  whaleFlow(
    request: WhaleFlowRequest,
    coverage: { exactAboveUsd: number; burstGapSeconds: number },
  ): Promise<WhaleFlow> {
    const shape = JSON.stringify([
      request.minUsd,
      request.by,
      request.windowHours,
      request.limit,
      coverage.exactAboveUsd,
      coverage.burstGapSeconds,
    ]);
    return this.#whaleFlow.get(shape, request.nowSeconds, () => readWhaleFlow(this.store, request, coverage));
  }
}

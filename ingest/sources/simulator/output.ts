/**
 * Where generated events go: buffers per topic, drained into an EventSink in a fixed topic order
 * (markets first, so a market is always on the log before its trades), or nowhere when the simulator
 * only catches its books up.
 */
import type { EventInputOf, TopicId } from '../../contract/topics.ts';
import type { EventSink } from '../../publisher.ts';

export interface SimulationCounts {
  markets: number;
  resolutions: number;
  fills: number;
  upstreamFills: number;
  legs: number;
  trades: number;
  bookTicks: number;
  profiles: number;
  equityPoints: number;
  statuses: number;
  leaderboardRows: number;
}

export function zeroCounts(): SimulationCounts {
  return {
    markets: 0,
    resolutions: 0,
    fills: 0,
    upstreamFills: 0,
    legs: 0,
    trades: 0,
    bookTicks: 0,
    profiles: 0,
    equityPoints: 0,
    statuses: 0,
    leaderboardRows: 0,
  };
}

export function addCounts(total: SimulationCounts, more: SimulationCounts): void {
  for (const key of Object.keys(total) as (keyof SimulationCounts)[]) total[key] += more[key];
}

export type MarketInput = EventInputOf<'markets'>;
export type FillInput = EventInputOf<'fillsArchive'>;
export type LegInput = EventInputOf<'positions'>;
export type TradeInput = EventInputOf<'trades'>;
export type BookInput = EventInputOf<'book'>;
export type ProfileInput = EventInputOf<'upstreamProfiles'>;
export type EquityInput = EventInputOf<'upstreamEquity'>;
export type StatusInput = EventInputOf<'upstreamStatus'>;
export type LeaderboardInput = EventInputOf<'upstreamLeaderboard'>;

export interface EventOutput {
  market(event: MarketInput): void;
  archiveFill(event: FillInput): void;
  upstreamFill(event: FillInput): void;
  leg(event: LegInput): void;
  trade(event: TradeInput): void;
  book(event: BookInput): void;
  profile(event: ProfileInput): void;
  equity(event: EquityInput): void;
  status(event: StatusInput): void;
  leaderboard(event: LeaderboardInput): void;
}

/** Drops everything: used while the books are caught up to a later start. */
export const DISCARD: EventOutput = {
  market: () => undefined,
  archiveFill: () => undefined,
  upstreamFill: () => undefined,
  leg: () => undefined,
  trade: () => undefined,
  book: () => undefined,
  profile: () => undefined,
  equity: () => undefined,
  status: () => undefined,
  leaderboard: () => undefined,
};

export class EventBuffers implements EventOutput {
  private markets: MarketInput[] = [];
  private archiveFills: FillInput[] = [];
  private upstreamFills: FillInput[] = [];
  private legs: LegInput[] = [];
  private trades: TradeInput[] = [];
  private books: BookInput[] = [];
  private profiles: ProfileInput[] = [];
  private equityPoints: EquityInput[] = [];
  private statuses: StatusInput[] = [];
  private leaderboardRows: LeaderboardInput[] = [];
  private resolutions = 0;
  size = 0;

  market(event: MarketInput): void {
    this.markets.push(event);
    if (event.type === 'resolution') this.resolutions++;
    this.size++;
  }
  archiveFill(event: FillInput): void {
    this.archiveFills.push(event);
    this.size++;
  }
  upstreamFill(event: FillInput): void {
    this.upstreamFills.push(event);
    this.size++;
  }
  leg(event: LegInput): void {
    this.legs.push(event);
    this.size++;
  }
  trade(event: TradeInput): void {
    this.trades.push(event);
    this.size++;
  }
  book(event: BookInput): void {
    this.books.push(event);
    this.size++;
  }
  profile(event: ProfileInput): void {
    this.profiles.push(event);
    this.size++;
  }
  equity(event: EquityInput): void {
    this.equityPoints.push(event);
    this.size++;
  }
  status(event: StatusInput): void {
    this.statuses.push(event);
    this.size++;
  }
  leaderboard(event: LeaderboardInput): void {
    this.leaderboardRows.push(event);
    this.size++;
  }

  /** Publishes everything buffered, topic by topic, adds what was published to `counts`, and empties. */
  async drainInto(sink: EventSink, counts: SimulationCounts): Promise<void> {
    const publish = async <T extends TopicId>(topicId: T, events: readonly EventInputOf<T>[]) => {
      if (events.length > 0) await sink.publish(topicId, events);
    };
    const batch = {
      markets: this.markets,
      archiveFills: this.archiveFills,
      upstreamFills: this.upstreamFills,
      legs: this.legs,
      trades: this.trades,
      books: this.books,
      profiles: this.profiles,
      equityPoints: this.equityPoints,
      statuses: this.statuses,
      leaderboardRows: this.leaderboardRows,
      resolutions: this.resolutions,
    };
    this.markets = [];
    this.archiveFills = [];
    this.upstreamFills = [];
    this.legs = [];
    this.trades = [];
    this.books = [];
    this.profiles = [];
    this.equityPoints = [];
    this.statuses = [];
    this.leaderboardRows = [];
    this.resolutions = 0;
    this.size = 0;

    await publish('markets', batch.markets);
    await publish('fillsArchive', batch.archiveFills);
    await publish('fillsUpstream', batch.upstreamFills);
    await publish('positions', batch.legs);
    await publish('trades', batch.trades);
    await publish('book', batch.books);
    await publish('upstreamProfiles', batch.profiles);
    await publish('upstreamEquity', batch.equityPoints);
    await publish('upstreamStatus', batch.statuses);
    await publish('upstreamLeaderboard', batch.leaderboardRows);

    counts.markets += batch.markets.length - batch.resolutions;
    counts.resolutions += batch.resolutions;
    counts.fills += batch.archiveFills.length;
    counts.upstreamFills += batch.upstreamFills.length;
    counts.legs += batch.legs.length;
    counts.trades += batch.trades.length;
    counts.bookTicks += batch.books.length;
    counts.profiles += batch.profiles.length;
    counts.equityPoints += batch.equityPoints.length;
    counts.statuses += batch.statuses.length;
    counts.leaderboardRows += batch.leaderboardRows.length;
  }
}

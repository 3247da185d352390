/**
 * The simulated world moving forward one second at a time from the start of the simulated period
 * (genesis). Within a second: upstream statements (from the books as they stand), market listings,
 * markets opening, then every live market in market order. Each market is generated from its own keys,
 * so the order of events is a function of time alone, never of how the caller chunked it.
 */
import { TraderLedger } from './accounting.ts';
import { MarketRuntime, type WorldContext } from './market.ts';
import type { EventOutput } from './output.ts';
import {
  marketsOpeningBetween,
  marketsPublishedBetween,
  marketsStandingAt,
  type MarketSpec,
  type SpecMemo,
} from './schedule.ts';
import type { SimulatedTrader } from './traders.ts';
import { isUpstreamOffline, publishUpstream } from './upstream.ts';

/** The schedule is consulted an hour at a time (or less, to the end of an emit). */
const SCHEDULE_CHUNK = 3_600;

/** The oldest activity of the simulated period (its first hour) went through the old exchange contract. */
const V1_ERA_SECONDS = 3_600;

export interface WorldSettings {
  seed: number;
  intensity: number;
  traders: readonly SimulatedTrader[];
}

function metadataEvent(spec: MarketSpec, version: number) {
  return {
    type: 'metadata',
    condition_id: spec.conditionId,
    title: spec.title,
    slug: spec.slug,
    outcome1: spec.outcome1,
    outcome2: spec.outcome2,
    category: spec.category,
    title_start_ts: spec.titleStartTs,
    end_ts: spec.endTs,
    version,
    icon: spec.icon,
  } as const;
}

/** The listings and openings of one schedule block, consumed in time order. */
interface ScheduleBlock {
  start: number;
  listings: MarketSpec[];
  openings: MarketSpec[];
  listingCursor: number;
  openingCursor: number;
}

export class SimulationEngine {
  /** Every second before this one has been generated. */
  cursorTs: number;
  readonly genesisTs: number;

  private readonly world: WorldSettings;
  private readonly context: WorldContext;
  private readonly ledgers: TraderLedger[];
  /** Live markets in market order. */
  private active: MarketRuntime[] = [];
  /** Listed before genesis and still unresolved: their metadata is (re)stated at genesis. */
  private readonly standingAtGenesis: MarketSpec[];
  /** Specs listed but not yet opened. */
  private readonly specMemo: SpecMemo = new Map();
  private block: ScheduleBlock | undefined;

  constructor(world: WorldSettings, genesisTs: number) {
    this.world = world;
    this.genesisTs = genesisTs;
    this.cursorTs = genesisTs;
    this.ledgers = world.traders.map((trader) => new TraderLedger(trader.historicalPnlUsd));
    this.context = {
      seed: world.seed,
      intensity: world.intensity,
      traders: world.traders,
      ledgers: this.ledgers,
      genesisTs,
      v1UntilTs: genesisTs + V1_ERA_SECONDS,
      upstreamOffline: (ts) => isUpstreamOffline(world.seed, ts),
    };
    this.standingAtGenesis = marketsStandingAt(world.seed, genesisTs, this.specMemo);
    for (const spec of this.standingAtGenesis) {
      if (spec.openTs < genesisTs) {
        this.specMemo.delete(spec.orderKey);
        this.active.push(new MarketRuntime(spec, this.context, genesisTs));
      }
    }
  }

  /** Generates every second in [cursorTs, toTs) into `out`. */
  advance(toTs: number, out: EventOutput): void {
    while (this.cursorTs < toTs) {
      const chunkEnd = Math.min(toTs, (Math.floor(this.cursorTs / SCHEDULE_CHUNK) + 1) * SCHEDULE_CHUNK);
      this.advanceChunk(this.cursorTs, chunkEnd, out);
      this.cursorTs = chunkEnd;
    }
  }

  /** The schedule of the block holding `ts`, with its cursors at `ts`. */
  private scheduleAt(ts: number): ScheduleBlock {
    const start = Math.floor(ts / SCHEDULE_CHUNK) * SCHEDULE_CHUNK;
    if (this.block?.start !== start) {
      const { seed } = this.world;
      const end = start + SCHEDULE_CHUNK;
      const listings = marketsPublishedBetween(seed, start, end, this.specMemo).sort(
        (left, right) => left.publishTs - right.publishTs || left.orderKey - right.orderKey,
      );
      const openings = marketsOpeningBetween(seed, start, end, this.specMemo).sort(
        (left, right) => left.openTs - right.openTs || left.orderKey - right.orderKey,
      );
      this.block = { start, listings, openings, listingCursor: 0, openingCursor: 0 };
    }
    const block = this.block;
    while (block.listingCursor < block.listings.length && block.listings[block.listingCursor]!.publishTs < ts)
      block.listingCursor++;
    while (block.openingCursor < block.openings.length && block.openings[block.openingCursor]!.openTs < ts)
      block.openingCursor++;
    return block;
  }

  private advanceChunk(fromTs: number, toTs: number, out: EventOutput): void {
    const block = this.scheduleAt(fromTs);
    const upstreamWorld = {
      seed: this.world.seed,
      genesisTs: this.genesisTs,
      traders: this.world.traders,
      ledgers: this.ledgers,
    };
    for (let ts = fromTs; ts < toTs; ts++) {
      publishUpstream(upstreamWorld, ts, out);
      if (ts === this.genesisTs) {
        for (const spec of this.standingAtGenesis) out.market(metadataEvent(spec, ts));
      }
      while (block.listingCursor < block.listings.length && block.listings[block.listingCursor]!.publishTs === ts) {
        const spec = block.listings[block.listingCursor++]!;
        out.market(metadataEvent(spec, spec.publishTs));
      }
      while (block.openingCursor < block.openings.length && block.openings[block.openingCursor]!.openTs === ts) {
        // Markets opening now sort after every market already open (market order starts with openTs).
        const spec = block.openings[block.openingCursor++]!;
        this.specMemo.delete(spec.orderKey);
        this.active.push(new MarketRuntime(spec, this.context, ts));
      }
      let anyFinished = false;
      for (const market of this.active) {
        if (market.wakeTs <= ts) {
          market.step(ts, out);
          if (market.finished) anyFinished = true;
        }
      }
      if (anyFinished) this.active = this.active.filter((market) => !market.finished);
    }
  }
}

/**
 * What the live plane streams, read from the log as ingest writes it: a consumer group of its own per
 * instance, starting at the end of the log (a live plane has no past), over the topics it streams
 * (fills, trades, book ticks, markets, and the chain's head: provisional fills and prints with the marks that
 * end them, ingest/contract/head.ts). Only messages whose key someone subscribed to (a watched market,
 * a watched or followed wallet: the topics' partition keys) are decoded; the rest are skipped unread, so
 * a plane nobody watches costs next to nothing, even during a backfill. Its recordings go the other way,
 * onto the log (`recordingsOn`).
 *
 * The plane receives each event as a `LiveFeedEvent`, prices already in UP space. A message that does not
 * match its schema is skipped here: ingest dead-letters it, with its reason, on its own path.
 */
import { randomUUID } from 'node:crypto';
import type { Config } from '../config.ts';
import type { Logger } from '../log.ts';
import { PREPARE_PART_MESSAGES } from './bus/accumulator.ts';
import type { BatchProcessor, EventLog, LogConsumer, PartitionSlice } from './bus/types.ts';
import type { LiveInput, RecordingSink } from '../live-input.ts';
import type { EventSink } from './publisher.ts';
import { upNormalizedPrice } from './contract/primitives.ts';
import { TOPICS, type EventInputOf, type EventOf, type TopicId, type TopicNames } from './contract/topics.ts';
import { HEAD_TOPIC, headEventSchema, type HeadEvent } from './contract/head.ts';

/** What the plane receives: its input, prices already in UP space. */
type LiveFeedEvent = LiveInput;

/** Recordings as the log takes them: the `tapes` topic's metadata and the `tape.events` topic's events. */
type TapeRecordingSink = RecordingSink<EventInputOf<'tapes'>, EventInputOf<'tapeEvents'>>;

export interface LiveFeedTarget {
  /** Whether anyone subscribed to this market (watches) or wallet (watches and follows). */
  wantsMarket(market: string): boolean;
  wantsWallet(wallet: string): boolean;
  publish(event: LiveFeedEvent): void;
}

/** The topics the plane streams, and what each message's key is. */
const STREAMED: readonly { topic: TopicId; key: 'market' | 'wallet' | 'any' }[] = [
  { topic: 'fillsArchive', key: 'wallet' },
  { topic: 'fillsUpstream', key: 'wallet' },
  { topic: 'trades', key: 'market' },
  { topic: 'book', key: 'market' },
  // Every market's metadata (the names of a followed trader's new markets) and resolutions.
  { topic: 'markets', key: 'any' },
];

/** The events of one slice the plane wants, in log order. */
export function liveEventsOf(
  slice: PartitionSlice,
  topicId: TopicId,
  keyKind: 'market' | 'wallet' | 'any',
  target: Pick<LiveFeedTarget, 'wantsMarket' | 'wantsWallet'>,
): LiveFeedEvent[] {
  const events: LiveFeedEvent[] = [];
  for (const message of slice.messages) {
    if (!message.value) continue;
    if (keyKind !== 'any') {
      const key = message.key?.toString('utf8') ?? '';
      if (keyKind === 'market' ? !target.wantsMarket(key) : !target.wantsWallet(key)) continue;
    }
    let json: unknown;
    try {
      json = JSON.parse(message.value.toString('utf8'));
    } catch {
      continue;
    }
    const event = toLiveEvent(topicId, json);
    if (event) events.push(event);
  }
  return events;
}

/** A fill as the plane streams it, with the identity every copy of it shares (the topic's event id). */
function fillInput(fill: EventOf<'fillsArchive'>): Extract<LiveFeedEvent, { kind: 'fill' }> {
  return {
    kind: 'fill',
    market: fill.condition_id,
    wallet: fill.wallet,
    ts: fill.ts,
    side: fill.side,
    price: upNormalizedPrice(fill.token_side, fill.price),
    token_side: fill.token_side,
    size_tokens: fill.size_tokens,
    usd: fill.usd,
    key: TOPICS.fillsArchive.id(fill),
  };
}

function tradeInput(trade: EventOf<'trades'>): Extract<LiveFeedEvent, { kind: 'trade' }> {
  return {
    kind: 'trade',
    market: trade.condition_id,
    ts: trade.ts,
    price: upNormalizedPrice(trade.token_side, trade.price),
    size_tokens: trade.size_tokens,
    usd: trade.usd,
    token_side: trade.token_side,
    key: TOPICS.trades.id(trade),
  };
}

/** The head's events the plane wants (chain.head: provisional fills and prints, every block's mark), in order. */
function headEventsOf(
  slice: PartitionSlice,
  target: Pick<LiveFeedTarget, 'wantsMarket' | 'wantsWallet'>,
): LiveFeedEvent[] {
  const events: LiveFeedEvent[] = [];
  for (const message of slice.messages) {
    if (!message.value) continue;
    let parsed: ReturnType<typeof headEventSchema.safeParse>;
    try {
      parsed = headEventSchema.safeParse(JSON.parse(message.value.toString('utf8')));
    } catch {
      continue;
    }
    if (!parsed.success) continue;
    const event: HeadEvent = parsed.data;
    const tag = {
      block: event.block,
      hash: event.block_hash,
      blockTs: event.block_ts,
      seenMs: event.seen_ms,
    };
    switch (event.type) {
      case 'fill':
        if (target.wantsWallet(event.fill.wallet))
          events.push({ ...fillInput(event.fill), provisional: { ...tag, ref: event.ref } });
        break;
      case 'trade':
        if (target.wantsMarket(event.trade.condition_id))
          events.push({ ...tradeInput(event.trade), provisional: { ...tag, ref: event.ref } });
        break;
      case 'mark':
        events.push({
          kind: 'mark',
          block: event.block,
          hash: event.block_hash,
          state: event.state,
          blockTs: event.block_ts,
        });
        break;
      case 'leg':
        break;
    }
  }
  return events;
}

function toLiveEvent(topicId: TopicId, json: unknown): LiveFeedEvent | null {
  switch (topicId) {
    case 'fillsArchive':
    case 'fillsUpstream': {
      const parsed = TOPICS.fillsArchive.schema.safeParse(json);
      return parsed.success ? fillInput(parsed.data) : null;
    }
    case 'trades': {
      const parsed = TOPICS.trades.schema.safeParse(json);
      return parsed.success ? tradeInput(parsed.data) : null;
    }
    case 'book': {
      const parsed = TOPICS.book.schema.safeParse(json);
      if (!parsed.success) return null;
      const tick = parsed.data;
      return { kind: 'book', market: tick.condition_id, ts: tick.ts, bid: tick.bid, ask: tick.ask };
    }
    case 'markets': {
      const parsed = TOPICS.markets.schema.safeParse(json);
      if (!parsed.success) return null;
      const event = parsed.data;
      if (event.type === 'metadata')
        return {
          kind: 'names',
          market: event.condition_id,
          outcome1: event.outcome1,
          outcome2: event.outcome2,
          title: event.title,
        };
      if (event.type === 'resolution')
        return {
          kind: 'resolution',
          market: event.condition_id,
          ts: event.ts,
          winnerTokenSide: event.winner_token_side,
        };
      return null;
    }
    default:
      return null;
  }
}

/** The physical topics the plane reads. */
export function streamedTopics(topics: TopicNames): string[] {
  return [...STREAMED.map((entry) => topics.of(entry.topic)), topics.physical(HEAD_TOPIC)];
}

export interface LiveFeed {
  stop(): Promise<void>;
}

/** Starts reading the log for `target`; resolves once the consumer holds its place at the end of the log. */
export async function startLiveFeed(options: {
  config: Config;
  eventLog: EventLog;
  topics: TopicNames;
  target: LiveFeedTarget;
  log: Logger;
  /** The consumer group (default: one of its own, `live.groupPrefix` and a random id). */
  groupId?: string;
}): Promise<LiveFeed> {
  const { config, eventLog, topics, target } = options;
  const streamed = new Map(STREAMED.map((entry) => [topics.of(entry.topic), entry]));
  const headTopic = topics.physical(HEAD_TOPIC);
  const consumer: LogConsumer = eventLog.consumer({
    groupId: options.groupId ?? `${config.live.groupPrefix}${randomUUID()}`,
    fromBeginning: false,
    reportsProgress: false,
    // Best effort: a plane that falls behind skips what the log no longer holds, and never holds ingest back.
    lossy: true,
    maxBytesPerPartition: config.ingest.maxBytesPerPartition,
    maxBytes: config.ingest.maxBytes,
    partitionsConsumedConcurrently: config.ingest.partitionsConsumedConcurrently,
    fetchMaxWaitMs: config.ingest.fetchMaxWaitMs,
    // Events go out as soon as they are read: a batch is whatever one fetch brought.
    maxBatchMessages: 1,
    maxBatchBytes: config.ingest.maxBatchBytes,
    lingerMs: 0,
    eagerBatchMessages: 1,
    // Most messages are skipped on their key, unread: ten times ingest's parts take about as long to
    // prepare, and the feed needs ten times fewer turns of the event loop to keep pace with ingest (what
    // it falls behind by is dropped from the in-process log: bus/memory.ts).
    preparePartMessages: 10 * PREPARE_PART_MESSAGES,
    sessionTimeoutMs: config.kafka.sessionTimeoutMs,
    heartbeatIntervalMs: config.kafka.heartbeatIntervalMs,
  });
  const processor: BatchProcessor<LiveFeedEvent[]> = {
    prepare: (slice) => {
      if (slice.topic === headTopic) return headEventsOf(slice, target);
      const entry = streamed.get(slice.topic);
      return entry ? liveEventsOf(slice, entry.topic, entry.key, target) : [];
    },
    write: async (prepared) => {
      for (const events of prepared) for (const event of events) target.publish(event);
    },
  };
  await consumer.start(streamedTopics(topics), processor);
  options.log.info({ topics: streamed.size, log: eventLog.kind }, 'live plane reading the log');
  return { stop: () => consumer.stop() };
}

/**
 * The plane's recordings onto the log: a recording's events on `tape.events`, then its metadata on `tapes`
 * (the metadata never counts an event that is not published before it).
 */
export function recordingsOn(sink: EventSink): TapeRecordingSink {
  return {
    publish: async (tape, events) => {
      if (events.length > 0) await sink.publish('tapeEvents', events);
      await sink.publish('tapes', [tape]);
    },
  };
}

/**
 * What a role that serves the plane hands its HTTP server: the feed read from `eventLog`, and the
 * recordings published back on the same log (`all` in process, `live` on Kafka), where ingest lands them.
 */
export function livePlaneOn(options: {
  config: Config;
  eventLog: EventLog;
  topics: TopicNames;
  publisher: EventSink;
  log: Logger;
}): { liveFeed: (target: LiveFeedTarget) => Promise<LiveFeed>; liveRecordings: TapeRecordingSink } {
  const { config, eventLog, topics, publisher, log } = options;
  return {
    liveFeed: (target) => startLiveFeed({ config, eventLog, topics, target, log: log.child({ name: 'live' }) }),
    liveRecordings: recordingsOn(publisher),
  };
}

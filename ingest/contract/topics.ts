/**
 * The topic registry: for each logical topic, its schema, its partition key, the stable id of each
 * event, and the projection row it lands as. The ingest pipeline, the sources, replay and the topic
 * table of docs/events.md all read this one list.
 */
import type { z } from 'zod';
import {
  accountSchema,
  apiKeySchema,
  bookTickSchema,
  fillSchema,
  marketEventSchema,
  positionLegSchema,
  tapeSchema,
  tapeStreamEventSchema,
  tradeSchema,
  upstreamEquityPointSchema,
  upstreamProfileSchema,
  upstreamLeaderboardSchema,
  upstreamStatusSchema,
  watcherCountSchema,
} from './events.ts';
import { fillId, legId, printId, upNormalizedPrice } from './primitives.ts';
import { FILL_SOURCE_RANK, INFERRED_RESOLUTION_SOURCE } from '../../projections/vocabulary.ts';

/** Tables that events land in (the raw projections; derived ones are fed from these). */
export type LandingTable =
  | 'markets_meta'
  | 'market_resolutions'
  | 'market_tokens'
  | 'market_migrations'
  | 'fills'
  | 'position_legs'
  | 'trades'
  | 'book_ticks'
  | 'upstream_profiles'
  | 'upstream_equity'
  | 'upstream_status'
  | 'upstream_leaderboard'
  | 'watchers'
  | 'accounts'
  | 'api_keys'
  | 'tapes'
  | 'tape_events';

export interface Landing {
  table: LandingTable;
  row: Record<string, unknown>;
}

export interface TopicSpec<S extends z.ZodType = z.ZodType> {
  /** Logical name; the Kafka topic is the configured prefix plus this. */
  name: string;
  description: string;
  schema: S;
  /** Kafka message key: events with the same key stay in order on one partition. */
  key: (event: z.output<S>) => string;
  /** What the key is, for the documentation. */
  keyName: string;
  /** Stable id: the same real-world event always has the same id, whichever source sent it. */
  id: (event: z.output<S>) => string;
  land: (event: z.output<S>) => Landing;
}

function topic<S extends z.ZodType>(spec: TopicSpec<S>): TopicSpec<S> {
  return spec;
}

/** Archive fills win over upstream copies of the same fill when both exist (ReplacingMergeTree version: FILL_SOURCE_RANK). */
function fillTopic(name: keyof typeof FILL_SOURCE_RANK, description: string) {
  return topic({
    name,
    description,
    schema: fillSchema,
    key: (fill) => fill.wallet,
    keyName: 'wallet',
    // Not the log index: the upstream's is synthetic. The shared fill id makes the two copies one.
    id: (fill) => `${fill.wallet}:${fill.condition_id}:${fillId(fill)}`,
    land: (fill) => ({
      table: 'fills',
      row: {
        fill_id: fillId(fill),
        wallet: fill.wallet,
        condition_id: fill.condition_id,
        side: fill.side,
        token_side: fill.token_side,
        price: fill.price,
        up_price: upNormalizedPrice(fill.token_side, fill.price),
        size_tokens: fill.size_tokens,
        usd: fill.usd,
        role: fill.role,
        era: fill.era,
        ts: fill.ts,
        name: fill.name ?? '',
        fee_usd: fill.fee_usd ?? 0,
        source_rank: FILL_SOURCE_RANK[name],
      },
    }),
  });
}

export const TOPICS = {
  markets: topic({
    name: 'markets',
    description:
      'Market metadata (both outcome names, the start time named in the title), resolutions (winning side, payout numerators), the two outcome token ids, and the legacy market a Protocol V2 market was migrated from.',
    schema: marketEventSchema,
    key: (event) => event.condition_id,
    keyName: 'condition_id',
    id: (event) => {
      switch (event.type) {
        case 'metadata':
          return `${event.condition_id}:metadata:${event.version}`;
        case 'resolution':
          return `${event.condition_id}:resolution`;
        case 'tokens':
          return `${event.condition_id}:tokens`;
        case 'migration':
          return `${event.condition_id}:migration:${event.v2_condition_id}`;
      }
    },
    land: (event): Landing => {
      switch (event.type) {
        case 'metadata':
          return {
            table: 'markets_meta',
            row: {
              condition_id: event.condition_id,
              title: event.title,
              slug: event.slug,
              outcome1: event.outcome1,
              outcome2: event.outcome2,
              category: event.category,
              title_start_ts: event.title_start_ts,
              end_ts: event.end_ts,
              icon: event.icon,
              version: event.version,
            },
          };
        case 'resolution':
          return {
            table: 'market_resolutions',
            row: {
              condition_id: event.condition_id,
              // 0: no single winner (a split payout); the numerators say how it paid.
              winner_token_side: event.winner_token_side ?? 0,
              payout1: event.payout_numerators?.[0] ?? null,
              payout2: event.payout_numerators?.[1] ?? null,
              ts: event.ts,
              // Stated resolutions outrank an inferred one (migration 0026).
              inferred: event.source === INFERRED_RESOLUTION_SOURCE ? 1 : 0,
              source: event.source ?? '',
            },
          };
        case 'tokens':
          return {
            table: 'market_tokens',
            row: {
              condition_id: event.condition_id,
              token1_id: event.token1_id,
              token2_id: event.token2_id,
              neg_risk: event.neg_risk ? 1 : 0,
            },
          };
        case 'migration':
          return {
            table: 'market_migrations',
            row: { v2_condition_id: event.v2_condition_id, condition_id: event.condition_id },
          };
      }
    },
  }),
  fillsArchive: fillTopic('fills.archive', 'Fills read from the on-chain archive (indexer).'),
  fillsUpstream: fillTopic('fills.upstream', "Fills polled from the upstream provider's data API."),
  positions: topic({
    name: 'positions',
    description:
      'Position legs that never appear as fills: SPLIT, MERGE, REDEEM, neg-risk conversions (CONVERT_OUT, CONVERT_IN) and Protocol V2 horizontal splits and merges (HORIZONTAL_SPLIT, HORIZONTAL_MERGE).',
    schema: positionLegSchema,
    key: (leg) => leg.wallet,
    keyName: 'wallet',
    // As for fills: the upstream's log index is synthetic; the shared leg id makes the two copies one.
    id: (leg) => `${leg.wallet}:${leg.condition_id}:${legId(leg)}`,
    land: (leg) => ({
      table: 'position_legs',
      row: {
        leg_id: legId(leg),
        wallet: leg.wallet,
        condition_id: leg.condition_id,
        kind: leg.kind,
        tokens: leg.tokens,
        usd: leg.usd,
        era: leg.era,
        ts: leg.ts,
      },
    }),
  }),
  trades: topic({
    name: 'trades',
    description: 'Market-wide trade prints (anyone’s), for price tapes and marks.',
    schema: tradeSchema,
    key: (trade) => trade.condition_id,
    keyName: 'condition_id',
    // Not the log index (the upstream's is synthetic): the shared print id makes the two copies one. The
    // chain's copy wins by its seq (every upstream and imported print sorts before the chain's in a second).
    id: (trade) => `${trade.condition_id}:${printId(trade)}`,
    land: (trade) => ({
      table: 'trades',
      row: {
        trade_id: printId(trade),
        condition_id: trade.condition_id,
        token_side: trade.token_side,
        price: trade.price,
        up_price: upNormalizedPrice(trade.token_side, trade.price),
        size_tokens: trade.size_tokens,
        usd: trade.usd,
        taker_side: trade.taker_side ?? '',
        ts: trade.ts,
        seq: trade.seq,
      },
    }),
  }),
  book: topic({
    name: 'book',
    description: 'Top-of-book ticks (best bid and ask, UP space).',
    schema: bookTickSchema,
    key: (tick) => tick.condition_id,
    keyName: 'condition_id',
    id: (tick) => `${tick.condition_id}:${tick.seq}`,
    land: (tick) => ({ table: 'book_ticks', row: { ...tick } }),
  }),
  upstreamProfiles: topic({
    name: 'upstream.profiles',
    description: "The upstream provider's profile statistics of a trader (name, image, pnl, portfolio value).",
    schema: upstreamProfileSchema,
    key: (profile) => profile.wallet,
    keyName: 'wallet',
    id: (profile) => `${profile.wallet}:${profile.as_of}`,
    land: (profile) => ({ table: 'upstream_profiles', row: { ...profile } }),
  }),
  upstreamEquity: topic({
    name: 'upstream.equity',
    description: "Points of the upstream provider's equity (cumulative pnl) curve of a trader.",
    schema: upstreamEquityPointSchema,
    key: (point) => point.wallet,
    keyName: 'wallet',
    id: (point) => `${point.wallet}:${point.ts}`,
    land: (point) => ({ table: 'upstream_equity', row: { ...point } }),
  }),
  upstreamStatus: topic({
    name: 'upstream.status',
    description: 'Heartbeats of the upstream poller: online or offline.',
    schema: upstreamStatusSchema,
    key: () => 'upstream',
    keyName: '"upstream" (one partition: heartbeats stay in order)',
    id: (status) => `upstream:${status.ts}`,
    land: (status) => ({ table: 'upstream_status', row: { ...status } }),
  }),
  upstreamLeaderboard: topic({
    name: 'upstream.leaderboard',
    description:
      "The upstream provider's leaderboard as last read (window, metric, rank per trader): the popular shelf's members.",
    schema: upstreamLeaderboardSchema,
    key: (row) => `${row.period}:${row.metric}`,
    keyName: 'period:metric (one board stays in order)',
    id: (row) => `${row.period}:${row.metric}:${row.as_of}:${row.rank}`,
    land: (row) => ({ table: 'upstream_leaderboard', row: { ...row } }),
  }),
  watchers: topic({
    name: 'watchers',
    description:
      'Watcher counts as the simulator once invented them. Nothing publishes or reads them now (the popular shelf counts live-plane sessions); kept so older logs and exports still load.',
    schema: watcherCountSchema,
    key: (count) => count.wallet,
    keyName: 'wallet',
    id: (count) => `${count.wallet}:${count.ts}`,
    land: (count) => ({ table: 'watchers', row: { ...count } }),
  }),
  accounts: topic({
    name: 'accounts',
    description: 'Accounts and their plans, from the dashboard or the admin CLI.',
    schema: accountSchema,
    key: (account) => account.account_id,
    keyName: 'account_id',
    id: (account) => `${account.account_id}:${account.version}`,
    land: (account) => ({ table: 'accounts', row: { ...account } }),
  }),
  keys: topic({
    name: 'keys',
    description: 'API keys of accounts, as SHA-256 only, with label and last four characters.',
    schema: apiKeySchema,
    key: (apiKey) => apiKey.account_id,
    keyName: 'account_id',
    id: (apiKey) => `${apiKey.key_id}:${apiKey.version}`,
    land: (apiKey) => ({ table: 'api_keys', row: { ...apiKey } }),
  }),
  tapes: topic({
    name: 'tapes',
    description: "Recorded sessions' metadata (the live plane's recordings), private to the recording account.",
    schema: tapeSchema,
    key: (tape) => tape.account_id,
    keyName: 'account_id',
    id: (tape) => `${tape.tape_id}:${tape.version}`,
    land: (tape) => ({ table: 'tapes', row: { ...tape } }),
  }),
  tapeEvents: topic({
    name: 'tape.events',
    description:
      'The StreamEvents of recorded sessions, `{type, ts, ...payload}` with their tape and position (book and trade prices in UP space, fills as the Fill fields).',
    schema: tapeStreamEventSchema,
    key: (event) => event.tape_id,
    keyName: 'tape_id (one partition per tape: its events stay in order)',
    id: (event) => `${event.tape_id}:${event.seq}`,
    land: (event) => {
      const { tape_id, account_id, seq, type, ts, ...payload } = event;
      // The StreamEvent as it is replayed and downloaded: {type, ts, ...payload}.
      return {
        table: 'tape_events',
        row: { account_id, tape_id, seq, type, ts, payload: JSON.stringify({ type, ts, ...payload }) },
      };
    },
  }),
} as const;

export type TopicId = keyof typeof TOPICS;
export type EventOf<T extends TopicId> = z.output<(typeof TOPICS)[T]['schema']>;
/** What a producer hands over: the schema's input shape (defaults may be omitted). */
export type EventInputOf<T extends TopicId> = z.input<(typeof TOPICS)[T]['schema']>;

export const TOPIC_IDS = Object.keys(TOPICS) as TopicId[];

/** Dead letters keep the original bytes as the value; reason and origin travel as headers. */
export const DEAD_LETTER_TOPIC = 'dead-letter';

/** Resolves logical names to the physical (prefixed) topic names of a deployment. */
export class TopicNames {
  constructor(readonly prefix: string) {}

  physical(logicalName: string): string {
    return `${this.prefix}${logicalName}`;
  }

  of(topicId: TopicId): string {
    return this.physical(TOPICS[topicId].name);
  }

  deadLetter(): string {
    return this.physical(DEAD_LETTER_TOPIC);
  }

  /** The topic id of a physical topic name, if it is one of ours. */
  idOf(physicalName: string): TopicId | undefined {
    if (!physicalName.startsWith(this.prefix)) return undefined;
    const logical = physicalName.slice(this.prefix.length);
    return TOPIC_IDS.find((topicId) => TOPICS[topicId].name === logical);
  }

  all(): string[] {
    return TOPIC_IDS.map((topicId) => this.of(topicId));
  }
}

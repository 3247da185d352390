/**
 * Decoding a batch is a pure step: bytes in, landing rows and dead letters out, plus the keys whose
 * rollups the batch touches. No Kafka, no ClickHouse; unit-tested on its own.
 */
import type { z } from 'zod';
import { TOPICS, type LandingTable, type TopicId } from './contract/topics.ts';
import type { LogMessage } from './bus/types.ts';

/** Where a message came from, with its original bytes. */
interface MessageOrigin {
  topic: string;
  partition: number;
  offset: string;
  key: Buffer | null;
  original: Buffer | null;
}

/** Why an event was dead-lettered, as a small fixed set (the metrics label; `reason` has the detail). */
type DeadLetterKind = 'unknown_topic' | 'empty_value' | 'invalid_json' | 'schema' | 'store_refused';

export interface DeadLetter extends MessageOrigin {
  reason: string;
  kind: DeadLetterKind;
}

export interface TableRows {
  /** Rows serialized as JSON lines, ready for a JSONEachRow insert. */
  lines: string[];
  /** The message each row came from (same index), to dead-letter a row ClickHouse refuses. */
  sources: MessageOrigin[];
}

export interface DecodedBatch {
  rowsByTable: Map<LandingTable, TableRows>;
  deadLetters: DeadLetter[];
  /** Markets that received a resolution. */
  resolvedMarkets: string[];
  /** What the rows change, for the notice the write sends (projections/changes.ts, StoreChanged). */
  /** The wallets whose data the rows change (every row with a `wallet`). */
  wallets: Set<string>;
  /** The markets whose metadata (title, outcome names) the rows change. */
  markets: Set<string>;
  /** The wallets of rows that carry a display name (`name`, non-empty). */
  named: Set<string>;
  /** The wallets of upstream profile and equity rows (UPSTREAM_PROFILE_TABLES). */
  upstream: Set<string>;
  /** The times (epoch s) of the fills the rows land: freshness is measured from them once they are written. */
  fillTimes: number[];
  validCount: number;
}

const MAX_REASON_LENGTH = 1000;

/** The tables the card's upstream block is read from (projections/upstream.ts): only their rows move a wallet's upstream profile. */
const UPSTREAM_PROFILE_TABLES: ReadonlySet<LandingTable> = new Set(['upstream_profiles', 'upstream_equity']);

export function describeZodError(error: z.ZodError): string {
  const text = error.issues
    .slice(0, 5)
    .map((issue) => `${issue.path.length > 0 ? issue.path.join('.') : '(event)'}: ${issue.message}`)
    .join('; ');
  return text.length > MAX_REASON_LENGTH ? `${text.slice(0, MAX_REASON_LENGTH)}…` : text;
}

export function decodeBatch(
  topicId: TopicId | undefined,
  topic: string,
  partition: number,
  messages: readonly LogMessage[],
): DecodedBatch {
  const decoded: DecodedBatch = {
    rowsByTable: new Map(),
    deadLetters: [],
    resolvedMarkets: [],
    wallets: new Set(),
    markets: new Set(),
    named: new Set(),
    upstream: new Set(),
    fillTimes: [],
    validCount: 0,
  };
  const reject = (message: LogMessage, kind: DeadLetterKind, reason: string) =>
    decoded.deadLetters.push({
      topic,
      partition,
      offset: message.offset,
      reason,
      kind,
      key: message.key,
      original: message.value,
    });

  for (const message of messages) {
    if (topicId === undefined) {
      reject(message, 'unknown_topic', `unknown topic ${topic}`);
      continue;
    }
    if (message.value === null || message.value.length === 0) {
      reject(message, 'empty_value', 'empty message value');
      continue;
    }
    let json: unknown;
    try {
      json = JSON.parse(message.value.toString('utf8'));
    } catch (error) {
      reject(message, 'invalid_json', `invalid JSON: ${(error as Error).message}`);
      continue;
    }
    const spec = TOPICS[topicId];
    const parsed = spec.schema.safeParse(json);
    if (!parsed.success) {
      reject(message, 'schema', `schema ${spec.name}: ${describeZodError(parsed.error)}`);
      continue;
    }
    // The registry's functions are typed per topic; here the topic is only known at run time.
    const landing = (spec.land as (event: unknown) => ReturnType<typeof spec.land>)(parsed.data);
    let tableRows = decoded.rowsByTable.get(landing.table);
    if (!tableRows) decoded.rowsByTable.set(landing.table, (tableRows = { lines: [], sources: [] }));
    tableRows.lines.push(JSON.stringify(landing.row));
    tableRows.sources.push({ topic, partition, offset: message.offset, key: message.key, original: message.value });
    decoded.validCount += 1;
    const wallet = (landing.row as { wallet?: unknown }).wallet;
    if (typeof wallet === 'string') {
      decoded.wallets.add(wallet);
      // trader_names is fed only by rows with a non-empty name (migrations 0002 and 0007).
      const name = (landing.row as { name?: unknown }).name;
      if (typeof name === 'string' && name !== '') decoded.named.add(wallet);
      if (UPSTREAM_PROFILE_TABLES.has(landing.table)) decoded.upstream.add(wallet);
    }
    if (landing.table === 'fills') decoded.fillTimes.push(landing.row.ts as number);
    if (landing.table === 'markets_meta') decoded.markets.add(landing.row.condition_id as string);
    if (landing.table === 'market_resolutions') {
      decoded.resolvedMarkets.push(landing.row.condition_id as string);
    }
  }
  return decoded;
}

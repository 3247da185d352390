/**
 * Test support of the Polymarket importer: an in-memory EventSink that records what an import publishes, in order. Every event
 * goes through `encodeEvent`, so a test fails if the importer ever emits an event its schema refuses.
 */
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { EventInputOf, EventOf, TopicId } from '../../ingest/contract/topics.ts';
import { encodeEvent, type EventSink } from '../../ingest/publisher.ts';

export interface Published {
  topicId: TopicId;
  event: unknown;
}

export class RecordingSink implements EventSink {
  /** Every event, in publication order across topics. */
  readonly log: Published[] = [];
  /** Size of each publish call. */
  readonly calls: { topicId: TopicId; count: number }[] = [];

  async publish<T extends TopicId>(topicId: T, events: readonly EventInputOf<T>[]): Promise<void> {
    this.calls.push({ topicId, count: events.length });
    for (const event of events) {
      const encoded = encodeEvent(topicId, event); // throws InvalidEventError on a contract violation
      this.log.push({ topicId, event: JSON.parse(encoded.value.toString()) as unknown });
    }
  }

  events<T extends TopicId>(topicId: T): EventOf<T>[] {
    return this.log.filter((entry) => entry.topicId === topicId).map((entry) => entry.event as EventOf<T>);
  }
}

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, '../..');
export const polymarketData = path.resolve(repoRoot, '../shared/data/polymarket');
export const collectmarketsDir = path.join(polymarketData, 'collectmarkets');

/** Quotes a CSV field when it needs it (RFC 4180). */
function csvField(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

export function csvLine(fields: readonly string[]): string {
  return fields.map(csvField).join(',');
}

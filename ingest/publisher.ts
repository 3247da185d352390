/**
 * The one way our own sources (simulator, importer, replay, admin CLI) put events on the log: each event
 * is validated against its topic's schema, keyed by the registry, and sent as its normalized JSON.
 */
import { TOPICS, type EventInputOf, type EventOf, type TopicId, type TopicNames } from './contract/topics.ts';
import type { LogProducer, OutgoingMessage } from './bus/types.ts';
import { describeZodError } from './decode.ts';
import { sourceEventsPublished } from '../metrics/registry.ts';

/** Messages per produce request: keeps requests well under Kafka's default 1 MB message-set limits. */
const MESSAGES_PER_SEND = 2_000;

export class InvalidEventError extends Error {
  constructor(
    readonly topicId: TopicId,
    readonly reason: string,
  ) {
    super(`invalid ${TOPICS[topicId].name} event: ${reason}`);
  }
}

/** Validates and encodes one event; throws InvalidEventError with the schema's reason. */
export function encodeEvent<T extends TopicId>(topicId: T, event: EventInputOf<T>): OutgoingMessage {
  const spec = TOPICS[topicId];
  const parsed = spec.schema.safeParse(event);
  if (!parsed.success) throw new InvalidEventError(topicId, describeZodError(parsed.error));
  const normalized = parsed.data as EventOf<T>;
  const key = (spec.key as (value: EventOf<T>) => string)(normalized);
  return { key, value: JSON.stringify(normalized) };
}

/** What a source needs: somewhere to put validated events of a topic. EventPublisher is the real one. */
export interface EventSink {
  publish<T extends TopicId>(topicId: T, events: readonly EventInputOf<T>[]): Promise<void>;
}

export class EventPublisher implements EventSink {
  private published = 0;

  constructor(
    private readonly producer: LogProducer,
    private readonly topics: TopicNames,
  ) {}

  get count(): number {
    return this.published;
  }

  async publish<T extends TopicId>(topicId: T, events: readonly EventInputOf<T>[]): Promise<void> {
    await this.publishEncoded(
      topicId,
      events.map((event) => encodeEvent(topicId, event)),
    );
  }

  /** Sends already-encoded messages (replay of exported files keeps the original bytes). */
  async publishEncoded(topicId: TopicId, messages: readonly OutgoingMessage[]): Promise<void> {
    const topic = this.topics.of(topicId);
    for (let start = 0; start < messages.length; start += MESSAGES_PER_SEND) {
      const chunk = messages.slice(start, start + MESSAGES_PER_SEND);
      await this.producer.send(topic, chunk);
      this.published += chunk.length;
      sourceEventsPublished.inc({ topic: TOPICS[topicId].name }, chunk.length);
    }
  }
}

/**
 * The archive's events onto the log, encoded once. They are built by facts.ts from logs decode.ts checked at
 * the boundary (hashes, quantities, ABI words through viem), already in the contract's normalized form (lower
 * case hex, every default set), so the topic schema is not run a second time per event on the hot path: the
 * message is the event's JSON and the registry's key. The unit test holds this equal to the schema's own
 * encoding (encodeEvent) for every event of a generated chain and of the recorded real logs, and ingest
 * validates every message it reads (a bad one is dead-lettered there, never lost).
 */
import type { OutgoingMessage } from '../../bus/types.ts';
import { TOPICS, type EventInputOf, type EventOf, type TopicId } from '../../contract/topics.ts';

export function encodeArchiveEvent<T extends TopicId>(topicId: T, event: EventInputOf<T>): OutgoingMessage {
  const key = (TOPICS[topicId].key as (value: EventOf<T>) => string)(event as EventOf<T>);
  return { key, value: JSON.stringify(event) };
}

export function encodeArchiveEvents<T extends TopicId>(
  topicId: T,
  events: readonly EventInputOf<T>[],
): OutgoingMessage[] {
  const messages = new Array<OutgoingMessage>(events.length);
  for (let index = 0; index < events.length; index++) messages[index] = encodeArchiveEvent(topicId, events[index]!);
  return messages;
}

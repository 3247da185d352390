/**
 * Helpers for the simulator's tests: a sink that records what it is given, and small fixed worlds.
 */
import { createHash } from 'node:crypto';
import type { EventInputOf, TopicId } from '../../contract/topics.ts';
import type { EventSink } from '../../publisher.ts';
import { createSimulator, type Simulator, type SimulatorOptions } from './index.ts';

export interface PublishCall {
  topicId: TopicId;
  events: readonly unknown[];
}

export class RecordingSink implements EventSink {
  readonly calls: PublishCall[] = [];
  private readonly byTopic = new Map<TopicId, unknown[]>();

  async publish<T extends TopicId>(topicId: T, events: readonly EventInputOf<T>[]): Promise<void> {
    this.calls.push({ topicId, events: [...events] });
    const list = this.byTopic.get(topicId) ?? [];
    for (const event of events) list.push(event);
    this.byTopic.set(topicId, list);
  }

  events<T extends TopicId>(topicId: T): EventInputOf<T>[] {
    return (this.byTopic.get(topicId) ?? []) as EventInputOf<T>[];
  }

  topics(): TopicId[] {
    return [...this.byTopic.keys()];
  }

  /** A digest of each topic's event sequence, in a fixed topic order. */
  digestByTopic(): Record<string, string> {
    const digests: Record<string, string> = {};
    for (const topicId of [...this.byTopic.keys()].sort()) {
      digests[topicId] = createHash('sha256')
        .update(JSON.stringify(this.byTopic.get(topicId)))
        .digest('hex');
    }
    return digests;
  }

  /** A digest of the publish calls themselves, grouping included. */
  digestOfCalls(): string {
    return createHash('sha256').update(JSON.stringify(this.calls)).digest('hex');
  }
}

/** 2026-01-04 12:00 UTC: a fixed instant, so that tests do not depend on the clock. */
export const TEST_GENESIS = 1_767_528_000;

export async function recordWindow(
  options: SimulatorOptions,
  fromTs: number,
  toTs: number,
): Promise<{ simulator: Simulator; sink: RecordingSink }> {
  const simulator = createSimulator(options);
  const sink = new RecordingSink();
  await simulator.emit(fromTs, toTs, sink);
  return { simulator, sink };
}

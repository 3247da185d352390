/**
 * Lands events in the store exactly as the ingest pipeline would (same schema parse, same row
 * mapping, one insert per table with a deduplication token), without a log in between: for tests and
 * benchmarks of the projections themselves. Returns the tokens, which are also the rollup batches the
 * inserts staged.
 */
import { TOPICS, type EventInputOf, type TopicId } from '../../ingest/contract/topics.ts';
import type { Store } from '../../projections/store.ts';

let serial = 0;

export async function landEvents<T extends TopicId>(
  store: Store,
  topicId: T,
  events: readonly EventInputOf<T>[],
  token?: string,
): Promise<string[]> {
  const spec = TOPICS[topicId];
  const byTable = new Map<string, string[]>();
  for (const event of events) {
    // The registry's functions are typed per topic; here the topic is a type parameter.
    const landing = (spec.land as (value: unknown) => { table: string; row: Record<string, unknown> })(
      spec.schema.parse(event),
    );
    let lines = byTable.get(landing.table);
    if (!lines) byTable.set(landing.table, (lines = []));
    lines.push(JSON.stringify(landing.row));
  }
  const tokens: string[] = [];
  for (const [table, lines] of byTable) {
    const tableToken = token ?? `landed-${process.pid}-${++serial}-${table}`;
    await store.insertJsonLines(table, lines, tableToken);
    tokens.push(tableToken);
  }
  return tokens;
}

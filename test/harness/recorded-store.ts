/** A store that records the SQL text of every query it is asked (tests assert which statements a read sends). */
import type { Store } from '../../projections/store.ts';

/** The same store; each query's SQL text is appended to `sent` before it runs. */
export function recordingQueries(store: Store, sent: string[]): Store {
  return Object.freeze({
    ...store,
    database: store.database,
    kind: store.kind,
    query: async <Row>(...args: Parameters<Store['query']>): Promise<Row[]> => {
      sent.push(args[0]);
      return store.query<Row>(...args);
    },
  });
}

/**
 * Resuming a deterministic source from what the store holds. After a crash, a source (the simulator,
 * the demo's recorded sessions) publishes again everything after its last checkpoint; some of those
 * events had reached the store before the crash, the rest died with the in-process log. This sink lets
 * through only the events the store lacks: each event's landing row is compared with a snapshot of the
 * identities the store held when the process started (taken before anything was published again), one
 * stored row cancelling one published event. So a resumed run lands exactly the rows of an
 * uninterrupted one: nothing missing, nothing twice, even in the raw landing tables.
 */
import type { Store } from '../../projections/store.ts';
import {
  ACCOUNT_LANDING,
  SIMULATED_LANDING,
  landedIdentity,
  readLandedOfAccounts,
  readLandedSince,
  type AccountLandingTable,
  type SimulatedLandingTable,
} from '../../projections/landed.ts';
import { TOPICS, type EventInputOf, type LandingTable, type TopicId } from '../contract/topics.ts';
import type { EventSink } from '../publisher.ts';

const IDENTITY_COLUMNS: Partial<Record<LandingTable, readonly string[]>> = {
  ...Object.fromEntries(Object.entries(SIMULATED_LANDING).map(([table, spec]) => [table, spec.columns])),
  ...Object.fromEntries(Object.entries(ACCOUNT_LANDING).map(([table, spec]) => [table, spec.columns])),
};

/** Rows the store holds, by `table|identity`, with their counts. */
export type LandedSnapshot = Map<string, number>;

function addTable(snapshot: LandedSnapshot, table: LandingTable, identities: Map<string, number>): void {
  for (const [identity, count] of identities) snapshot.set(`${table}|${identity}`, count);
}

/** Every simulated row dated at or after `fromTs` (a resumed world publishes again from there). */
export async function snapshotSimulatedSince(
  store: Store,
  fromTs: number,
  into: LandedSnapshot = new Map(),
): Promise<LandedSnapshot> {
  for (const table of Object.keys(SIMULATED_LANDING) as SimulatedLandingTable[])
    addTable(into, table, await readLandedSince(store, table, fromTs));
  return into;
}

/** Every recorded-session row of these accounts. */
export async function snapshotAccountSessions(
  store: Store,
  accountIds: readonly string[],
  into: LandedSnapshot = new Map(),
): Promise<LandedSnapshot> {
  for (const table of Object.keys(ACCOUNT_LANDING) as AccountLandingTable[])
    addTable(into, table, await readLandedOfAccounts(store, table, accountIds));
  return into;
}

export class SkipLandedSink implements EventSink {
  /** Events not published because the store already held them. */
  skipped = 0;

  constructor(
    private readonly inner: EventSink,
    private readonly landed: LandedSnapshot,
  ) {}

  /** Rows of the snapshot not yet matched by a published event. */
  get outstanding(): number {
    return this.landed.size;
  }

  async publish<T extends TopicId>(topicId: T, events: readonly EventInputOf<T>[]): Promise<void> {
    if (this.landed.size === 0) return this.inner.publish(topicId, events);
    const spec = TOPICS[topicId];
    const missing: EventInputOf<T>[] = [];
    for (const event of events) {
      const parsed = spec.schema.safeParse(event);
      if (parsed.success) {
        const { table, row } = (spec.land as (value: unknown) => { table: LandingTable; row: Record<string, unknown> })(
          parsed.data,
        );
        const columns = IDENTITY_COLUMNS[table];
        if (columns) {
          const key = `${table}|${landedIdentity(columns, row)}`;
          const stored = this.landed.get(key);
          if (stored !== undefined) {
            if (stored > 1) this.landed.set(key, stored - 1);
            else this.landed.delete(key);
            this.skipped += 1;
            continue;
          }
        }
      }
      // Invalid events go on: the publisher refuses them with the schema's reason, as it would have.
      missing.push(event);
    }
    if (missing.length > 0) await this.inner.publish(topicId, missing);
  }
}

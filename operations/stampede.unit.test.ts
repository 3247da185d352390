/**
 * Stampedes (issue 46): a hundred calls that need the same name, market names, upstream report or
 * archive ranges at once read the store once, and again once per expiry, never once per caller; the
 * facts of the whole store are answered from memory while their next read runs. In the `api` role (a
 * server store, no feed) as in `all`. The store is a fake that counts its statements by what they read
 * and holds each read until the test releases it; time is a hand-driven clock.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../config.ts';
import type { Store } from '../projections/store.ts';
import { ReadCache } from './read-cache.ts';
import { Reader } from './reads.ts';

const lifetimes = parseConfig({}).api.readCache;
const CALLERS = 100;

function countingStore() {
  const reads = { names: 0, marketNames: 0, upstreamReport: 0, archiveRanges: 0 };
  const held: (() => void)[] = [];
  const store = {
    database: 'd',
    kind: 'server',
    async query<Row>(sql: string, params?: Record<string, unknown>): Promise<Row[]> {
      await new Promise<void>((resolve) => held.push(resolve));
      if (sql.includes('upstream_status')) {
        reads.upstreamReport += 1;
        return [{ state: 'online', ts: 100 + reads.upstreamReport }] as Row[];
      }
      if (sql.includes('archive_checkpoints')) {
        reads.archiveRanges += 1;
        return [{ source: 'chain', last_block: reads.archiveRanges, first_block: 0, last_ts: 5 }] as Row[];
      }
      if (params?.names_of) {
        reads.marketNames += 1;
        return (params.names_of as string[]).map((id) => ({
          condition_id: id,
          title: `Market ${id}`,
          outcome1: 'Yes',
          outcome2: 'No',
          title_start_ts: null,
        })) as Row[];
      }
      reads.names += 1;
      return [{ name: `name ${reads.names}` }] as Row[];
    },
  } as unknown as Store;
  /** Lets every read asked for so far answer, and waits until their callers have them. */
  const release = async () => {
    while (held.length > 0) held.shift()!();
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { store, reads, release };
}

function readerOf(store: Store) {
  let ms = 1_000_000;
  const time = { now: () => ms, advance: (by: number) => (ms += by) };
  const cache = new ReadCache({ bytes: 100_000, smallEntries: 1000 }, { clock: time });
  return { time, reader: new Reader(store, cache, lifetimes) };
}

const many = <T>(call: () => Promise<T>) => Array.from({ length: CALLERS }, call);

describe('one read per expiry, not per caller', () => {
  it("a trader's name: a hundred callers at once share one read, and again after its lifetime", async () => {
    const { store, reads, release } = countingStore();
    const { time, reader } = readerOf(store);
    const first = many(() => reader.traderName('0xa'));
    await release();
    expect(new Set(await Promise.all(first))).toEqual(new Set(['name 1']));
    expect(reads.names).toBe(1);
    // Within its lifetime: kept, no read.
    expect(await reader.traderName('0xa')).toBe('name 1');
    expect(reads.names).toBe(1);
    // A name without a feed lives 10 s (docs/performance.md, Caches).
    time.advance(10_001);
    const second = many(() => reader.traderName('0xa'));
    await release();
    expect(new Set(await Promise.all(second))).toEqual(new Set(['name 2']));
    expect(reads.names).toBe(2);
  });

  it('market names: callers that need a market being read wait for that read, and read only the others', async () => {
    const { store, reads, release } = countingStore();
    const { reader } = readerOf(store);
    const first = reader.marketNames(['0xm1', '0xm2']);
    const overlapping = many(() => reader.marketNames(['0xm2', '0xm1']));
    await release();
    for (const names of await Promise.all([first, ...overlapping]))
      expect([...names.keys()].sort()).toEqual(['0xm1', '0xm2']);
    expect(reads.marketNames).toBe(1);
    // One more market beside two kept ones: one read of the new one alone.
    const more = reader.marketNames(['0xm1', '0xm3']);
    await release();
    expect((await more).get('0xm3')?.title).toBe('Market 0xm3');
    expect(reads.marketNames).toBe(2);
  });

  it("the upstream's report and the archive's ranges: read once, then answered from memory while read again behind the calls", async () => {
    const { store, reads, release } = countingStore();
    const { time, reader } = readerOf(store);
    const reports = many(() => reader.sources.upstreamReport());
    const ranges = many(() => reader.sources.archiveRanges());
    await release();
    expect(new Set((await Promise.all(reports)).map((report) => report?.ts))).toEqual(new Set([101]));
    expect(new Set((await Promise.all(ranges)).map((range) => range[0]?.block))).toEqual(new Set([1]));
    expect(reads).toMatchObject({ upstreamReport: 1, archiveRanges: 1 });

    // In the second half of its lifetime: answered at once with the kept report; one read starts behind.
    time.advance((lifetimes.upstreamStateSeconds * 1000 * 3) / 4);
    const served = await Promise.all(many(() => reader.sources.upstreamReport()));
    expect(new Set(served.map((report) => report?.ts))).toEqual(new Set([101]));
    await release();
    expect(reads.upstreamReport).toBe(2);
    // The next call has the report read behind, without a read of its own.
    expect((await reader.sources.upstreamReport())?.ts).toBe(102);
    expect(reads.upstreamReport).toBe(2);

    // Past its whole lifetime with nobody asking: the next callers wait for one read, together.
    time.advance(lifetimes.upstreamStateSeconds * 1000 * 2);
    const late = many(() => reader.sources.upstreamReport());
    await release();
    expect(new Set((await Promise.all(late)).map((report) => report?.ts))).toEqual(new Set([103]));
    expect(reads.upstreamReport).toBe(3);
    expect(reads.archiveRanges).toBe(1);
  });
});

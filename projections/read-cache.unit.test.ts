/**
 * The read caches: resolved market answers are read once and kept; open ones are read again once their
 * short lifetime is over; nothing is kept when a cache is off; the byte budget evicts; names live their
 * TTL; a store without caches always reads. Time is a hand-driven clock.
 */
import { describe, expect, it } from 'vitest';
import { withReadCaches } from './cached-reads.ts';
import {
  NO_MARKET_NAMES,
  observeReads,
  ReadCaches,
  RefreshAhead,
  type ReadCacheSettings,
} from './read-cache.ts';
import type { Store } from './store.ts';
import { readMarketNames } from './market-names.ts';
import { readTraderName } from './traders.ts';
import { changesOf, type StoreChanges } from './changes.ts';

const SETTINGS: ReadCacheSettings = {
  traderNameSeconds: 10,
  traderNameEntries: 100,
  traderNameWatchedSeconds: 600,
  marketNameSeconds: 10,
  marketNameEntries: 100,
  marketNameWatchedSeconds: 600,
  upstreamStateSeconds: 1,
  whaleFlowSeconds: 1,
  openMarketSeconds: 2,
  marketAnswerBytes: 10_000,
  traderAnswerSeconds: 5,
  traderOwnAnswerSeconds: 600,
  traderAnswerBytes: 10_000,
};

function clock() {
  let ms = 1_000_000;
  return { now: () => ms, advance: (by: number) => (ms += by) };
}

/** A read that counts its calls and answers `value`. */
function counted<T>(value: () => T) {
  const calls = { n: 0 };
  return { calls, read: async () => (calls.n++, value()) };
}

describe('ReadCaches.market', () => {
  it('reads a resolved answer once, however often and however late it is asked for', async () => {
    const time = clock();
    const caches = new ReadCaches(SETTINGS, time);
    const { calls, read } = counted(() => ({ resolved: true, pnl: 5 }));
    for (let index = 0; index < 5; index++) {
      expect(await caches.market('summary|w|c', read, (v) => v.resolved)).toEqual({ resolved: true, pnl: 5 });
      time.advance(3_600_000);
    }
    expect(calls.n).toBe(1);
  });

  it('reads an open answer again once openMarketSeconds have passed, not before', async () => {
    const time = clock();
    const caches = new ReadCaches(SETTINGS, time);
    let pnl = 1;
    const { calls, read } = counted(() => ({ resolved: false, pnl }));
    expect(await caches.market('k', read, (v) => v.resolved)).toEqual({ resolved: false, pnl: 1 });
    pnl = 2;
    time.advance(1_999);
    expect(await caches.market('k', read, (v) => v.resolved)).toEqual({ resolved: false, pnl: 1 });
    time.advance(2);
    expect(await caches.market('k', read, (v) => v.resolved)).toEqual({ resolved: false, pnl: 2 });
    expect(calls.n).toBe(2);
  });

  it('keeps nothing open when openMarketSeconds is 0, and nothing at all when the budget is 0', async () => {
    const time = clock();
    const noOpen = new ReadCaches({ ...SETTINGS, openMarketSeconds: 0 }, time);
    const open = counted(() => ({ resolved: false }));
    await noOpen.market('k', open.read, (v) => v.resolved);
    await noOpen.market('k', open.read, (v) => v.resolved);
    expect(open.calls.n).toBe(2);
    const off = new ReadCaches({ ...SETTINGS, marketAnswerBytes: 0 }, time);
    const resolved = counted(() => ({ resolved: true }));
    await off.market('k', resolved.read, (v) => v.resolved);
    await off.market('k', resolved.read, (v) => v.resolved);
    expect(resolved.calls.n).toBe(2);
  });

  it('never keeps a missing answer (null): the market may appear', async () => {
    const caches = new ReadCaches(SETTINGS, clock());
    const { calls, read } = counted(() => null as { resolved: boolean } | null);
    await caches.market('k', read, () => true);
    await caches.market('k', read, () => true);
    expect(calls.n).toBe(2);
  });

  it('holds at most its byte budget: the least recently used answer goes first', async () => {
    const caches = new ReadCaches({ ...SETTINGS, marketAnswerBytes: 2_500 }, clock());
    const big = (label: string) => ({ resolved: true, label, pad: 'x'.repeat(1_000) });
    const reads = ['a', 'b', 'c'].map((label) => counted(() => big(label)));
    for (const [index, label] of ['a', 'b', 'c'].entries())
      await caches.market(label, reads[index]!.read, (v) => v.resolved);
    // Two answers of ~1 KB fit in 2.5 KB: 'a' was evicted, 'b' and 'c' are kept.
    await caches.market('c', reads[2]!.read, (v) => v.resolved);
    await caches.market('b', reads[1]!.read, (v) => v.resolved);
    await caches.market('a', reads[0]!.read, (v) => v.resolved);
    expect(reads.map((r) => r.calls.n)).toEqual([2, 1, 1]);
  });
});

describe('observeReads', () => {
  it('reports each lookup to the observer the role installed, and nothing once it is removed', async () => {
    const seen: string[] = [];
    observeReads({ cacheLookup: (cache, outcome) => seen.push(`${cache} ${outcome}`) });
    try {
      const caches = new ReadCaches(SETTINGS, clock());
      expect(await caches.traderName('0xa', async () => 'alice')).toBe('alice');
      expect(await caches.traderName('0xa', async () => 'alicia')).toBe('alice');
      expect(seen).toEqual(['trader_name miss', 'trader_name hit']);
    } finally {
      observeReads(null);
    }
    await new ReadCaches(SETTINGS, clock()).traderName('0xb', async () => 'bob');
    expect(seen).toHaveLength(2);
  });
});

describe('readTraderName through the caches', () => {
  function fakeStore(names: Map<string, string>) {
    const queries = { n: 0 };
    const store = {
      database: 'd',
      kind: 'embedded',
      async query<Row>(_sql: string, params?: Record<string, unknown>): Promise<Row[]> {
        queries.n++;
        const name = names.get(String(params?.wallet));
        return (name === undefined ? [] : [{ name }]) as Row[];
      },
    } as unknown as Store;
    return { store, queries };
  }

  it('reuses a name for its TTL, then reads the new one; without caches every call reads', async () => {
    const names = new Map([['0xa', 'alice']]);
    const { store, queries } = fakeStore(names);
    const time = clock();
    const cached = withReadCaches(store, SETTINGS, time);
    expect(await readTraderName(cached, '0xa')).toBe('alice');
    names.set('0xa', 'alicia');
    time.advance(9_999);
    expect(await readTraderName(cached, '0xa')).toBe('alice');
    time.advance(2);
    expect(await readTraderName(cached, '0xa')).toBe('alicia');
    expect(await readTraderName(cached, '0xb')).toBe('');
    expect(await readTraderName(cached, '0xb')).toBe('');
    expect(queries.n).toBe(3);
    expect(await readTraderName(store, '0xa')).toBe('alicia');
    expect(await readTraderName(store, '0xa')).toBe('alicia');
    expect(queries.n).toBe(5);
  });

  it('with a worker reporting, keeps a name past its TTL until a row naming its wallet lands, at most traderNameWatchedSeconds', async () => {
    const names = new Map([['0xa', 'alice']]);
    const { store, queries } = fakeStore(names);
    const database = 'names_watched';
    const changes = changesOf(database);
    const stop = changes.watch();
    const time = clock();
    const cached = withReadCaches({ ...store, database }, SETTINGS, time);
    expect(await readTraderName(cached, '0xa')).toBe('alice');
    names.set('0xa', 'alicia');
    time.advance(60_000);
    // Nothing naming 0xa was written: the kept name is current, whatever else of 0xa (its fills) landed.
    expect(await readTraderName(cached, '0xa')).toBe('alice');
    changes.namesChanged(['0xb']);
    changes.changed(['0xa']);
    expect(await readTraderName(cached, '0xa')).toBe('alice');
    expect(queries.n).toBe(1);
    changes.namesChanged(['0xa']);
    expect(await readTraderName(cached, '0xa')).toBe('alicia');
    expect(queries.n).toBe(2);
    names.set('0xa', 'al');
    time.advance(600_001);
    expect(await readTraderName(cached, '0xa')).toBe('al');
    expect(queries.n).toBe(3);
    stop();
    // Unwatched again: the kept name is no longer known to be current.
    names.set('0xa', 'alf');
    expect(await readTraderName(cached, '0xa')).toBe('alf');
  });
});

describe('readMarketNames through the caches', () => {
  /** A store that answers READ_MARKET_NAMES from `titles` and records what each statement asked for. */
  function fakeStore(titles: Map<string, string>) {
    const asked: string[][] = [];
    const store = {
      database: 'd',
      kind: 'embedded',
      async query<Row>(_sql: string, params?: Record<string, unknown>): Promise<Row[]> {
        const namesOf = params?.names_of as string[];
        asked.push([...namesOf]);
        return namesOf
          .filter((id) => titles.has(id))
          .map((id) => ({
            part: 'meta',
            condition_id: id,
            title: titles.get(id),
            outcome1: 'Yes',
            outcome2: 'No',
            mark: null,
          })) as Row[];
      },
    } as unknown as Store;
    return { store, asked };
  }

  it('reads only the names it does not hold, keeps them their TTL, never keeps a market without metadata', async () => {
    const titles = new Map([
      ['0xc1', 'One'],
      ['0xc2', 'Two'],
    ]);
    const { store, asked } = fakeStore(titles);
    const time = clock();
    const cached = withReadCaches(store, SETTINGS, time);
    const first = await readMarketNames(cached, ['0xc1', '0xc2', '0xc1']);
    expect(Object.fromEntries([...first].map(([id, names]) => [id, names.title]))).toEqual({
      '0xc1': 'One',
      '0xc2': 'Two',
    });
    titles.set('0xc1', 'One, retitled');
    titles.set('0xc3', 'Three');
    const second = await readMarketNames(cached, ['0xc1', '0xc3', '0xc4']);
    expect([...second].map(([id, names]) => [id, names.title])).toEqual([
      ['0xc1', 'One'],
      ['0xc3', 'Three'],
    ]);
    // All held: no statement at all.
    await readMarketNames(cached, ['0xc2', '0xc3']);
    time.advance(10_001);
    expect((await readMarketNames(cached, ['0xc1'])).get('0xc1')?.title).toBe('One, retitled');
    expect(asked).toEqual([['0xc1', '0xc2'], ['0xc3', '0xc4'], ['0xc1']]);
    // Without caches every call reads everything.
    await readMarketNames(store, ['0xc1', '0xc2']);
    expect(asked.at(-1)).toEqual(['0xc1', '0xc2']);
  });

  it('keeps a market without metadata only while a worker reports changes, until its metadata lands', async () => {
    const titles = new Map<string, string>();
    const { store, asked } = fakeStore(titles);
    const time = clock();
    // No worker: the names may land any moment, so each read asks again.
    const unwatched = withReadCaches(store, SETTINGS, time);
    await readMarketNames(unwatched, ['0xn1']);
    expect((await readMarketNames(unwatched, ['0xn1'])).get('0xn1')).toBeUndefined();
    expect(asked).toEqual([['0xn1'], ['0xn1']]);
    // A worker reports: kept as having no names (no statement), until the market's metadata lands.
    const database = 'market_names_missing';
    const changes = changesOf(database);
    const stop = changes.watch();
    const watched = withReadCaches({ ...store, database }, SETTINGS, time);
    await readMarketNames(watched, ['0xn1']);
    expect((await readMarketNames(watched, ['0xn1'])).get('0xn1')).toEqual(NO_MARKET_NAMES);
    expect(asked).toHaveLength(3);
    titles.set('0xn1', 'Named');
    changes.marketsChanged(['0xn1']);
    expect((await readMarketNames(watched, ['0xn1'])).get('0xn1')?.title).toBe('Named');
    expect(asked).toHaveLength(4);
    stop();
  });

  it("with a worker reporting, keeps a market's names past their TTL until its metadata changes, also when it changes during the read", async () => {
    const titles = new Map([
      ['0xc1', 'One'],
      ['0xc2', 'Two'],
    ]);
    const { store, asked } = fakeStore(titles);
    const database = 'market_names_watched';
    const changes = changesOf(database);
    const stop = changes.watch();
    const time = clock();
    const cached = withReadCaches({ ...store, database }, SETTINGS, time);
    await readMarketNames(cached, ['0xc1', '0xc2']);
    titles.set('0xc1', 'One, retitled');
    time.advance(120_000);
    // Nothing about 0xc1 was written: both still held, no statement.
    expect((await readMarketNames(cached, ['0xc1', '0xc2'])).get('0xc1')?.title).toBe('One');
    expect(asked).toHaveLength(1);
    changes.marketsChanged(['0xc1']);
    expect((await readMarketNames(cached, ['0xc1', '0xc2'])).get('0xc1')?.title).toBe('One, retitled');
    expect(asked.at(-1)).toEqual(['0xc1']);
    // A retitle that lands while the names are being read: what was read is not kept as current.
    const racing = {
      ...store,
      database,
      query: async <Row>(sql: string, params?: Record<string, unknown>) => {
        const rows = await store.query<Row>(sql, params);
        changes.marketsChanged(['0xc2']);
        titles.set('0xc2', 'Two, retitled');
        return rows;
      },
    } as Store;
    changes.marketsChanged(['0xc2']);
    const racingCached = withReadCaches(racing, SETTINGS, time);
    expect((await readMarketNames(racingCached, ['0xc2'])).get('0xc2')?.title).toBe('Two');
    expect((await readMarketNames(racingCached, ['0xc2'])).get('0xc2')?.title).toBe('Two, retitled');
    // At most marketNameWatchedSeconds.
    titles.set('0xc1', 'One again');
    time.advance(600_001);
    expect((await readMarketNames(cached, ['0xc1'])).get('0xc1')?.title).toBe('One again');
    stop();
  });
});

describe('ReadCaches marks', () => {
  it('keeps a mark until its market trades again, only while a worker reports the trades', () => {
    const time = clock();
    const database = 'marks_cache';
    const changes = changesOf(database);
    const caches = new ReadCaches(SETTINGS, time, { database, kind: 'embedded' });
    // No worker reports: nothing is kept.
    expect(caches.marksReadStart()).toBeNull();
    caches.keepMark('0xm', { mark: 0.4, marked_at: 10 }, caches.marksReadStart());
    expect(caches.mark('0xm')).toBeUndefined();

    const stop = changes.watch();
    const readStart = caches.marksReadStart();
    caches.keepMark('0xm', { mark: 0.4, marked_at: 10 }, readStart);
    caches.keepMark('0xquiet', null, readStart);
    expect(caches.mark('0xm')).toEqual({ mark: 0.4, marked_at: 10 });
    // No trade yet is an answer too.
    expect(caches.mark('0xquiet')).toBeNull();
    // Another market's trade, a trader's change and a retitle leave it.
    changes.marksChanged(['0xother']);
    changes.changed(['0xm']);
    changes.marketsChanged(['0xm']);
    time.advance(60_000);
    expect(caches.mark('0xm')).toEqual({ mark: 0.4, marked_at: 10 });
    // A trade of the market: read again.
    changes.marksChanged(['0xm', '0xquiet']);
    expect(caches.mark('0xm')).toBeUndefined();
    expect(caches.mark('0xquiet')).toBeUndefined();

    // A mark read while the market traded is stale at once.
    const during = caches.marksReadStart();
    changes.marksChanged(['0xm']);
    caches.keepMark('0xm', { mark: 0.5, marked_at: 11 }, during);
    expect(caches.mark('0xm')).toBeUndefined();
    stop();
  });
});

describe('ReadCaches.trader', () => {
  // Each test its own database name: the changes are per database and process-wide.
  let databases = 0;
  function embedded() {
    const database = `trader_cache_${databases++}`;
    return { store: { database, kind: 'embedded' as const }, changes: changesOf(database) };
  }
  /** Caches on an embedded store whose worker reports (stop() ends the reporting), on a hand-driven clock. */
  function watched() {
    const time = clock();
    const { store, changes } = embedded();
    const stop = changes.watch();
    return { time, changes, stop, caches: new ReadCaches(SETTINGS, time, store) };
  }

  it('keeps an answer while no worker changed the trader, and reads again once its data changed', async () => {
    const { changes, stop, caches } = watched();
    let fills = 1;
    const { calls, read } = counted(() => ({ fills }));
    expect(await caches.trader('career', '0xa', '', read)).toEqual({ fills: 1 });
    fills = 2;
    expect(await caches.trader('career', '0xa', '', read)).toEqual({ fills: 1 });
    // Another wallet's write leaves it alone.
    changes.changed(['0xb']);
    expect(await caches.trader('career', '0xa', '', read)).toEqual({ fills: 1 });
    expect(calls.n).toBe(1);
    changes.changed(['0xc', '0xa']);
    expect(await caches.trader('career', '0xa', '', read)).toEqual({ fills: 2 });
    fills = 3;
    changes.everythingChanged();
    expect(await caches.trader('career', '0xa', '', read)).toEqual({ fills: 3 });
    expect(calls.n).toBe(3);
    stop();
  });

  it('shares a read under way with the callers of the same answer, unless the trader changed since it started', async () => {
    const { changes, stop, caches } = watched();
    let fills = 1;
    // Each read waits until released, oldest first.
    const waiting: (() => void)[] = [];
    const release = () => waiting.shift()?.();
    const { calls, read } = counted(async () => {
      const value = { fills };
      await new Promise<void>((resolve) => waiting.push(resolve));
      return value;
    });
    const first = caches.trader('career', '0xa', '', read);
    const second = caches.trader('career', '0xa', '', read);
    // A look without reading finds the read under way.
    const looked = caches.keptTrader('career', '0xa', '');
    expect(looked).toBeDefined();
    expect(calls.n).toBe(1);
    release();
    expect(await Promise.all([first, second, looked])).toEqual([{ fills: 1 }, { fills: 1 }, { fills: 1 }]);
    expect(calls.n).toBe(1);

    // The trader changes while a read is under way: a later caller reads again.
    changes.changed(['0xa']);
    fills = 2;
    const stale = caches.trader('career', '0xa', '', read);
    changes.changed(['0xa']);
    fills = 3;
    expect(caches.keptTrader('career', '0xa', '')).toBeUndefined();
    const fresh = caches.trader('career', '0xa', '', read);
    expect(calls.n).toBe(3);
    release();
    await stale;
    release();
    expect(await fresh).toEqual({ fills: 3 });
    stop();
  });

  it('looks without reading: nothing kept or under way is undefined, a kept answer is found', async () => {
    const { stop, caches } = watched();
    const { calls, read } = counted(() => ({ fills: 7 }));
    expect(caches.keptTrader('career', '0xa', '')).toBeUndefined();
    expect(calls.n).toBe(0);
    await caches.trader('career', '0xa', '', read);
    expect(await caches.keptTrader('career', '0xa', '')).toEqual({ fills: 7 });
    // Another key of the same trader is not the same answer.
    expect(caches.keptTrader('career', '0xa', 'other')).toBeUndefined();
    expect(calls.n).toBe(1);
    stop();
    // No worker reports any more: nothing kept counts.
    expect(caches.keptTrader('career', '0xa', '')).toBeUndefined();
  });

  it('drops what changed while it was being read', async () => {
    const { changes, stop, caches } = watched();
    let fills = 1;
    const { calls, read } = counted(() => ({ fills }));
    // The write lands while the first read runs: its answer may predate it.
    const during = async () => {
      const value = await read();
      changes.changed(['0xa']);
      fills = 2;
      return value;
    };
    expect(await caches.trader('fills', '0xa', 'p1', during)).toEqual({ fills: 1 });
    expect(await caches.trader('fills', '0xa', 'p1', read)).toEqual({ fills: 2 });
    expect(calls.n).toBe(2);
    stop();
  });

  it('reads again after traderAnswerSeconds however quiet the trader, and keys each answer by its arguments', async () => {
    const { time, stop, caches } = watched();
    let mark = 0.5;
    const { calls, read } = counted(() => ({ mark }));
    expect(await caches.trader('markets', '0xa', 'limit=1', read)).toEqual({ mark: 0.5 });
    expect(await caches.trader('markets', '0xa', 'limit=2', read)).toEqual({ mark: 0.5 });
    expect(calls.n).toBe(2);
    mark = 0.6;
    time.advance(4_999);
    expect(await caches.trader('markets', '0xa', 'limit=1', read)).toEqual({ mark: 0.5 });
    time.advance(2);
    expect(await caches.trader('markets', '0xa', 'limit=1', read)).toEqual({ mark: 0.6 });
    expect(calls.n).toBe(3);
    stop();
  });

  // Answers built from one kind of the wallet's rows: kept through its other rows (and, for the upstream
  // profile, past traderAnswerSeconds), dropped by a report of their own kind for the wallet, by
  // everything changing, and by their own lifetime.
  const followingOneKind = [
    {
      answer: 'the upstream profile',
      follows: 'upstream',
      // Long past traderAnswerSeconds (5 s), the trader trading all along.
      quietMs: 300_000,
      others: (changes: StoreChanges) => changes.changed(['0xa']),
      own: (changes: StoreChanges, wallet: string) => changes.upstreamChanged([wallet]),
      lifetimeMs: SETTINGS.traderOwnAnswerSeconds * 1000,
    },
    {
      answer: 'a fills page',
      follows: 'fills',
      quietMs: 4_000,
      // A refresh of the wallet's rollups, its position legs, the provider's rows.
      others: (changes: StoreChanges) => {
        changes.changed(['0xa']);
        changes.upstreamChanged(['0xa']);
      },
      own: (changes: StoreChanges, wallet: string) => changes.fillsChanged([wallet]),
      lifetimeMs: SETTINGS.traderAnswerSeconds * 1000,
    },
  ] as const;
  for (const { answer, follows, quietMs, others, own, lifetimeMs } of followingOneKind) {
    it(`keeps ${answer} through the wallet's other rows, until its own rows change, at most ${lifetimeMs / 1000} s`, async () => {
      const { time, changes, stop, caches } = watched();
      let value = 1;
      const { calls, read } = counted(() => ({ value }));
      const kept = () => caches.trader(follows, '0xa', '', read, follows);
      expect(await kept()).toEqual({ value: 1 });
      value = 2;
      time.advance(quietMs);
      others(changes);
      expect(await kept()).toEqual({ value: 1 });
      // Its own kind of rows of another wallet: still the same.
      own(changes, '0xb');
      expect(await kept()).toEqual({ value: 1 });
      expect(calls.n).toBe(1);
      // Of this wallet: read again at once.
      own(changes, '0xa');
      expect(await kept()).toEqual({ value: 2 });
      // Everything changed (a restart's re-derivation): read again.
      value = 3;
      changes.everythingChanged();
      expect(await kept()).toEqual({ value: 3 });
      // And at most its lifetime, however quiet.
      value = 4;
      time.advance(lifetimeMs + 1);
      expect(await kept()).toEqual({ value: 4 });
      expect(calls.n).toBe(4);
      stop();
    });
  }

  it("an answer about the trader follows changed() (the worker reports every row of the wallet there, the provider's and the fills too), not upstreamChanged() or fillsChanged() alone", async () => {
    const { changes, stop, caches } = watched();
    let value = 0;
    const { calls, read } = counted(() => ++value);
    expect(await caches.trader('career', '0xa', '', read)).toBe(1);
    changes.upstreamChanged(['0xa']);
    changes.fillsChanged(['0xa']);
    expect(await caches.trader('career', '0xa', '', read)).toBe(1);
    changes.changed(['0xa']);
    expect(await caches.trader('career', '0xa', '', read)).toBe(2);
    expect(calls.n).toBe(2);
    stop();
  });

  it('keeps nothing unless a worker of this process reports, nor on a server store, nor when off', async () => {
    const { store, changes } = embedded();
    let value = 0;
    const { calls, read } = counted(() => ++value);
    const unwatched = new ReadCaches(SETTINGS, clock(), store);
    expect(await unwatched.trader('career', '0xa', '', read)).toBe(1);
    expect(await unwatched.trader('career', '0xa', '', read)).toBe(2);
    const stop = changes.watch();
    const server = new ReadCaches(SETTINGS, clock(), { database: store.database, kind: 'server' });
    expect(await server.trader('career', '0xa', '', read)).toBe(3);
    expect(await server.trader('career', '0xa', '', read)).toBe(4);
    const off = new ReadCaches({ ...SETTINGS, traderAnswerSeconds: 0 }, clock(), store);
    expect(await off.trader('career', '0xa', '', read)).toBe(5);
    expect(await off.trader('career', '0xa', '', read)).toBe(6);
    const on = new ReadCaches(SETTINGS, clock(), store);
    expect(await on.trader('career', '0xa', '', read)).toBe(7);
    expect(await on.trader('career', '0xa', '', read)).toBe(7);
    // The worker stops: what it no longer reports can no longer be kept.
    stop();
    expect(await on.trader('career', '0xa', '', read)).toBe(8);
    expect(await on.trader('career', '0xa', '', read)).toBe(9);
    expect(calls.n).toBe(9);
  });
});

describe('RefreshAhead (the whale ranking)', () => {
  /** A computation the test finishes by hand, counting how often it started. */
  function computations() {
    const started: { at: number; finish: (value: string) => void; fail: (error: Error) => void }[] = [];
    const compute = (at: number) => () =>
      new Promise<string>((resolve, reject) => {
        started.push({ at, finish: resolve, fail: reject });
      });
    return { started, compute };
  }

  it('shares one computation among the callers of the same second, then answers from it', async () => {
    const rankings = new RefreshAhead<string>(10, 1);
    const { started, compute } = computations();
    const first = rankings.get('shape', 100, compute(100));
    const second = rankings.get('shape', 100, compute(100));
    expect(started).toHaveLength(1);
    started[0]!.finish('ranking@100');
    expect(await Promise.all([first, second])).toEqual(['ranking@100', 'ranking@100']);
    expect(await rankings.get('shape', 100, compute(100))).toBe('ranking@100');
    expect(started).toHaveLength(1);
  });

  it('serves the previous second at once while computing the new one (once), then the new one', async () => {
    const rankings = new RefreshAhead<string>(10, 1);
    const { started, compute } = computations();
    const initial = rankings.get('shape', 100, compute(100));
    started[0]!.finish('ranking@100');
    await initial;
    expect(await rankings.get('shape', 101, compute(101))).toBe('ranking@100');
    expect(await rankings.get('shape', 101, compute(101))).toBe('ranking@100');
    expect(started.map((computation) => computation.at)).toEqual([100, 101]);
    started[1]!.finish('ranking@101');
    await new Promise((resolve) => setImmediate(resolve));
    expect(await rankings.get('shape', 101, compute(101))).toBe('ranking@101');
    // Another shape is its own ranking.
    const other = rankings.get('other', 101, compute(101));
    expect(started).toHaveLength(3);
    started[2]!.finish('other@101');
    expect(await other).toBe('other@101');
  });

  it('waits for the computation when the answer at hand is older than the bound; a failed refresh leaves the old answer', async () => {
    const rankings = new RefreshAhead<string>(10, 1);
    const { started, compute } = computations();
    const initial = rankings.get('shape', 100, compute(100));
    started[0]!.finish('ranking@100');
    await initial;
    // One second later: served; the refresh fails.
    expect(await rankings.get('shape', 101, compute(101))).toBe('ranking@100');
    started[1]!.fail(new Error('store down'));
    await new Promise((resolve) => setImmediate(resolve));
    expect(await rankings.get('shape', 101, compute(101))).toBe('ranking@100');
    expect(started).toHaveLength(3); // the next caller retried
    // Two seconds past it: too old to serve, the caller waits for its own second.
    let answered: string | undefined;
    const late = rankings.get('shape', 103, compute(103)).then((value) => (answered = value));
    await new Promise((resolve) => setImmediate(resolve));
    expect(answered).toBeUndefined();
    started[3]!.finish('ranking@103');
    await late;
    expect(answered).toBe('ranking@103');
  });
});

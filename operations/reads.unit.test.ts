/**
 * The cached reads that go by batch (operations/reads.ts): market names and marks. A batch reads only
 * what is not kept; a market without metadata is kept as such only while a worker reports the store's
 * changes; a retitle during the read is not kept as current; a mark lives an open answer's lifetime.
 * The store is a fake that records what each statement asked for; time is a hand-driven clock.
 */
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../config.ts';
import { StoreChangeFeed } from '../projections/changes.ts';
import { NO_MARKET_NAMES } from '../projections/market-names.ts';
import type { Store } from '../projections/store.ts';
import { ReadCache } from './read-cache.ts';
import { Reader } from './reads.ts';

const lifetimes = parseConfig({}).api.readCache;

function clock() {
  let ms = 1_000_000;
  return { now: () => ms, advance: (by: number) => (ms += by) };
}

/** A store that answers market names from `titles`, wallet rows from `rows` and marks from `marks`, recording each statement's arguments. */
function fakeStore(titles: Map<string, string>, marks = new Map<string, number>()) {
  const asked: string[][] = [];
  const markReads: string[][] = [];
  let onRead: () => void = () => {};
  const store = {
    database: 'd',
    kind: 'embedded',
    async query<Row>(sql: string, params?: Record<string, unknown>): Promise<Row[]> {
      if (sql.includes('wallet_row')) {
        const row = (id: string) => ({
          condition_id: id,
          version: '1',
          wallet_row: JSON.stringify({ condition_id: id, resolved: false }),
        });
        return [row('0xm1'), row('0xm2')] as Row[];
      }
      if (sql.includes('market_marks_v2')) {
        const ids = params?.condition_ids as string[];
        markReads.push([...ids]);
        return ids
          .filter((id) => marks.has(id))
          .map((id) => ({ condition_id: id, mark: marks.get(id), marked_at: 7 })) as Row[];
      }
      const namesOf = params?.names_of as string[];
      asked.push([...namesOf]);
      const rows = namesOf
        .filter((id) => titles.has(id))
        .map((id) => ({
          condition_id: id,
          title: titles.get(id),
          outcome1: 'Yes',
          outcome2: 'No',
          title_start_ts: null,
        }));
      onRead();
      return rows as Row[];
    },
  } as unknown as Store;
  return { store, asked, markReads, duringRead: (f: () => void) => (onRead = f) };
}

function readerOf(store: Store, feed?: StoreChangeFeed) {
  const time = clock();
  const cache = new ReadCache(
    { bytes: 100_000, smallEntries: 100 },
    { clock: time, ...(feed ? { changes: feed } : {}) },
  );
  return { time, reader: new Reader(store, cache, lifetimes) };
}

const titlesOf = (names: Map<string, { title: string }>) =>
  Object.fromEntries([...names].map(([id, market]) => [id, market.title]));

describe('market names', () => {
  it('reads only the names it does not hold, keeps them their TTL, never keeps a market without metadata', async () => {
    const titles = new Map([
      ['0xc1', 'One'],
      ['0xc2', 'Two'],
    ]);
    const { store, asked } = fakeStore(titles);
    const { time, reader } = readerOf(store);
    expect(titlesOf(await reader.marketNames(['0xc1', '0xc2', '0xc1']))).toEqual({ '0xc1': 'One', '0xc2': 'Two' });
    titles.set('0xc1', 'One, retitled');
    titles.set('0xc3', 'Three');
    expect(titlesOf(await reader.marketNames(['0xc1', '0xc3', '0xc4']))).toEqual({ '0xc1': 'One', '0xc3': 'Three' });
    // All held: no statement at all.
    await reader.marketNames(['0xc2', '0xc3']);
    time.advance(10_001);
    expect((await reader.marketNames(['0xc1'])).get('0xc1')?.title).toBe('One, retitled');
    expect(asked).toEqual([['0xc1', '0xc2'], ['0xc3', '0xc4'], ['0xc1']]);
  });

  it('keeps a market without metadata only while a worker reports changes, until its metadata lands', async () => {
    const titles = new Map<string, string>();
    const { store, asked } = fakeStore(titles);
    // No worker: the names may land any moment, so each read asks again.
    const { reader: unreported } = readerOf(store);
    await unreported.marketNames(['0xn1']);
    expect((await unreported.marketNames(['0xn1'])).get('0xn1')).toBeUndefined();
    expect(asked).toEqual([['0xn1'], ['0xn1']]);
    // A worker reports: kept as having no names (no statement), until the market's metadata lands.
    const feed = new StoreChangeFeed();
    const stop = feed.report();
    const { reader } = readerOf(store, feed);
    await reader.marketNames(['0xn1']);
    expect((await reader.marketNames(['0xn1'])).get('0xn1')).toEqual(NO_MARKET_NAMES);
    expect(asked).toHaveLength(3);
    titles.set('0xn1', 'Named');
    feed.changed({ wallets: new Set(), markets: new Set(['0xn1']) });
    expect((await reader.marketNames(['0xn1'])).get('0xn1')?.title).toBe('Named');
    expect(asked).toHaveLength(4);
    stop();
  });

  it("with a worker reporting, keeps a market's names past their TTL until its metadata changes, also when it changes during the read", async () => {
    const titles = new Map([
      ['0xc1', 'One'],
      ['0xc2', 'Two'],
    ]);
    const { store, asked, duringRead } = fakeStore(titles);
    const feed = new StoreChangeFeed();
    const stop = feed.report();
    const { time, reader } = readerOf(store, feed);
    await reader.marketNames(['0xc1', '0xc2']);
    titles.set('0xc1', 'One, retitled');
    time.advance(120_000);
    // Nothing about 0xc1 was written (other wallets' rows were): both still held, no statement.
    feed.changed({ wallets: new Set(['0xc1']) });
    expect((await reader.marketNames(['0xc1', '0xc2'])).get('0xc1')?.title).toBe('One');
    expect(asked).toHaveLength(1);
    feed.changed({ wallets: new Set(), markets: new Set(['0xc1']) });
    expect((await reader.marketNames(['0xc1', '0xc2'])).get('0xc1')?.title).toBe('One, retitled');
    expect(asked.at(-1)).toEqual(['0xc1']);
    // A retitle that lands while the names are being read: what was read is not kept as current.
    feed.changed({ wallets: new Set(), markets: new Set(['0xc2']) });
    duringRead(() => {
      feed.changed({ wallets: new Set(), markets: new Set(['0xc2']) });
      titles.set('0xc2', 'Two, retitled');
      duringRead(() => {});
    });
    expect((await reader.marketNames(['0xc2'])).get('0xc2')?.title).toBe('Two');
    expect((await reader.marketNames(['0xc2'])).get('0xc2')?.title).toBe('Two, retitled');
    // At most the followed lifetime.
    titles.set('0xc1', 'One again');
    time.advance(600_001);
    expect((await reader.marketNames(['0xc1'])).get('0xc1')?.title).toBe('One again');
    stop();
  });
});

describe("a wallet's markets while a worker reports", () => {
  it("reads the rows alone and only the marks it does not hold, each kept an open answer's lifetime", async () => {
    const marks = new Map([['0xm1', 0.4]]);
    const { store, markReads } = fakeStore(new Map(), marks);
    const feed = new StoreChangeFeed();
    const stop = feed.report();
    const { time, reader } = readerOf(store, feed);
    const first = await reader.walletMarkets('0xa');
    expect(first.marks).toEqual([{ condition_id: '0xm1', mark: 0.4, marked_at: 7 }]);
    // Another wallet with the same open markets: its marks are at hand (0xm2 has no trade: that is kept too).
    marks.set('0xm1', 0.5);
    expect((await reader.walletMarkets('0xb')).marks).toEqual([{ condition_id: '0xm1', mark: 0.4, marked_at: 7 }]);
    expect(markReads).toEqual([['0xm1', '0xm2']]);
    time.advance(lifetimes.openMarketSeconds * 1000 + 1);
    expect((await reader.walletMarkets('0xc')).marks).toEqual([{ condition_id: '0xm1', mark: 0.5, marked_at: 7 }]);
    expect(markReads).toHaveLength(2);
    stop();
  });
});

describe('the markets list, read cold', () => {
  it("reads its page's market names while the marks are being read, and pages with both", async () => {
    const sent: string[] = [];
    let releaseMarks = () => {};
    let holdMarks = true;
    let namesAsked = () => {};
    const namesSent = new Promise<void>((resolve) => (namesAsked = resolve));
    const walletRow = (id: string, lastTs: number) => ({
      condition_id: id,
      version: '1',
      wallet_row: JSON.stringify({
        condition_id: id,
        resolved: false,
        last_ts: lastTs,
        net_tokens1: 10,
        net_tokens2: 0,
      }),
    });
    const store = {
      database: 'd',
      kind: 'server',
      async query<Row>(sql: string, params?: Record<string, unknown>): Promise<Row[]> {
        if (sql.includes('wallet_row')) {
          sent.push('rows');
          return [walletRow('0xm1', 100), walletRow('0xm2', 200)] as Row[];
        }
        if (sql.includes('market_marks_v2')) {
          sent.push('marks');
          if (holdMarks) await new Promise<void>((resolve) => (releaseMarks = resolve));
          return [{ condition_id: '0xm1', mark: 0.4, marked_at: 7 }] as Row[];
        }
        sent.push('names');
        namesAsked();
        return (params?.names_of as string[]).map((id) => ({
          condition_id: id,
          title: `Market ${id}`,
          outcome1: 'Yes',
          outcome2: 'No',
          title_start_ts: null,
        })) as Row[];
      },
    } as unknown as Store;
    const { reader } = readerOf(store);
    const page = reader.marketsPage('0xa', { limit: 1 });
    // The names statement is sent while the marks' statement is still held (the rows came first).
    await namesSent;
    expect(sent[0]).toBe('rows');
    expect([...sent].sort()).toEqual(['marks', 'names', 'rows']);
    releaseMarks();
    const answer = await page;
    // The most recently traded first: 0xm2 (no mark: unmarked), then the next page at 0xm1.
    expect(answer.markets.map((row) => [row.condition_id, row.title, row.market_value_usd])).toEqual([
      ['0xm2', 'Market 0xm2', null],
    ]);
    expect(answer.next).toEqual({ lastTradedAt: 200, conditionId: '0xm2' });
    // The second page: the wallet's markets are not kept without a feed, so they are read again.
    holdMarks = false;
    const second = reader.marketsPage('0xa', { limit: 1, after: answer.next! });
    expect((await second).markets.map((row) => [row.condition_id, row.market_value_usd])).toEqual([['0xm1', 4]]);
  });
});

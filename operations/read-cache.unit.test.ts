/**
 * The read cache's mechanism (read-cache.ts) with policies of each kind: a resolved market answer is read
 * once; an open one again after its lifetime; nothing is kept when off; the byte budget evicts; an
 * answer that follows a notice set is kept until a notice names its key, only while a worker reports,
 * and reads under way are shared unless what they depend on changed since they started. Time is a
 * hand-driven clock; the feed is a StoreChangeFeed the test reports into.
 */
import { describe, expect, it } from 'vitest';
import { EVERYTHING_CHANGED, StoreChangeFeed } from '../projections/changes.ts';
import { KeptLookups, ReadCache, RefreshAhead, type Policy } from './read-cache.ts';

function clock() {
  let ms = 1_000_000;
  return { now: () => ms, advance: (by: number) => (ms += by) };
}

/** A read that counts its calls and answers `value`. */
function counted<T>(value: () => T) {
  const calls = { n: 0 };
  return { calls, read: async () => (calls.n++, value()) };
}

type Answer = { resolved: boolean; label?: string; pad?: string } | null;
const MARKET: Policy<Answer> = {
  name: 'summary',
  memory: 'markets',
  ttlMs: 2000,
  resolved: (v) => v?.resolved === true,
};
const TRADER: Policy<unknown> = { name: 'career', memory: 'traders', follows: 'wallets', followedMs: 5000 };
const UPSTREAM: Policy<unknown> = {
  name: 'upstream_history',
  memory: 'traders',
  follows: 'upstream',
  followedMs: 600_000,
};
const NAME: Policy<string> = {
  name: 'trader_name',
  memory: 'small',
  follows: 'named',
  followedMs: 600_000,
  ttlMs: 10_000,
};

function cache(
  options: { bytes?: number; feed?: StoreChangeFeed; observe?: (a: string, o: 'hit' | 'miss') => void } = {},
) {
  const time = clock();
  const readCache = new ReadCache(
    { bytes: options.bytes ?? 10_000, smallEntries: 100 },
    {
      clock: time,
      ...(options.feed ? { changes: options.feed } : {}),
      ...(options.observe ? { observe: options.observe } : {}),
    },
  );
  return { time, cache: readCache };
}

/** A cache whose store's changes a worker reports (stop() ends the reporting). */
function followed() {
  const feed = new StoreChangeFeed();
  const stop = feed.report();
  return { feed, stop, ...cache({ feed }) };
}

describe('market answers', () => {
  it('reads a resolved answer once, however often and however late it is asked for', async () => {
    const { time, cache: answers } = cache();
    const { calls, read } = counted((): Answer => ({ resolved: true, label: 'pnl 5' }));
    for (let index = 0; index < 5; index++) {
      expect(await answers.through(MARKET, ['w', 'c'], read)).toEqual({ resolved: true, label: 'pnl 5' });
      time.advance(3_600_000);
    }
    expect(calls.n).toBe(1);
  });

  it('reads an open answer again once its lifetime has passed, not before', async () => {
    const { time, cache: answers } = cache();
    let label = 'one';
    const { calls, read } = counted((): Answer => ({ resolved: false, label }));
    expect(await answers.through(MARKET, ['k'], read)).toEqual({ resolved: false, label: 'one' });
    label = 'two';
    time.advance(1_999);
    expect(await answers.through(MARKET, ['k'], read)).toEqual({ resolved: false, label: 'one' });
    time.advance(2);
    expect(await answers.through(MARKET, ['k'], read)).toEqual({ resolved: false, label: 'two' });
    expect(calls.n).toBe(2);
  });

  it('keeps nothing open with a lifetime of 0, and nothing at all when the budget is 0', async () => {
    const { cache: answers } = cache();
    const open = counted((): Answer => ({ resolved: false }));
    await answers.through({ ...MARKET, ttlMs: 0 }, ['k'], open.read);
    await answers.through({ ...MARKET, ttlMs: 0 }, ['k'], open.read);
    expect(open.calls.n).toBe(2);
    const { cache: off } = cache({ bytes: 0 });
    const resolved = counted((): Answer => ({ resolved: true }));
    await off.through(MARKET, ['k'], resolved.read);
    await off.through(MARKET, ['k'], resolved.read);
    expect(resolved.calls.n).toBe(2);
  });

  it('never keeps a missing answer (null): the market may appear', async () => {
    const { cache: answers } = cache();
    const { calls, read } = counted((): Answer => null);
    await answers.through(MARKET, ['k'], read);
    await answers.through(MARKET, ['k'], read);
    expect(calls.n).toBe(2);
  });

  it('holds at most its byte budget: the least recently used answer goes first', async () => {
    const { cache: answers } = cache({ bytes: 2_500 });
    const big = (label: string): Answer => ({ resolved: true, label, pad: 'x'.repeat(1_000) });
    const reads = ['a', 'b', 'c'].map((label) => counted(() => big(label)));
    for (const [index, label] of ['a', 'b', 'c'].entries()) await answers.through(MARKET, [label], reads[index]!.read);
    // Two answers of ~1 KB fit in 2.5 KB: 'a' was evicted, 'b' and 'c' are kept.
    await answers.through(MARKET, ['c'], reads[2]!.read);
    await answers.through(MARKET, ['b'], reads[1]!.read);
    await answers.through(MARKET, ['a'], reads[0]!.read);
    expect(reads.map((r) => r.calls.n)).toEqual([2, 1, 1]);
  });

  it('keys each answer by its policy and arguments', async () => {
    const { cache: answers } = cache();
    const { calls, read } = counted((): Answer => ({ resolved: true }));
    await answers.through(MARKET, ['w', 'c1'], read);
    await answers.through(MARKET, ['w', 'c2'], read);
    await answers.through({ ...MARKET, name: 'chart' }, ['w', 'c1'], read);
    await answers.through(MARKET, ['w', 'c1'], read);
    expect(calls.n).toBe(3);
  });
});

describe('the observer', () => {
  it('is told each lookup by answer kind and outcome', async () => {
    const seen: string[] = [];
    const { cache: names } = cache({ observe: (answer, outcome) => seen.push(`${answer} ${outcome}`) });
    expect(await names.through(NAME, ['0xa'], async () => 'alice')).toBe('alice');
    expect(await names.through(NAME, ['0xa'], async () => 'alicia')).toBe('alice');
    expect(seen).toEqual(['trader_name miss', 'trader_name hit']);
  });
});

describe('answers that follow the notices', () => {
  it('keeps an answer while no notice names the trader, and reads again once one does', async () => {
    const { feed, stop, cache: answers } = followed();
    let fills = 1;
    const { calls, read } = counted(() => ({ fills }));
    expect(await answers.through(TRADER, ['0xa'], read)).toEqual({ fills: 1 });
    fills = 2;
    expect(await answers.through(TRADER, ['0xa'], read)).toEqual({ fills: 1 });
    // Another wallet's write, and the market sets, leave it alone.
    feed.changed({ wallets: new Set(['0xb']), markets: new Set(['0xa']), named: new Set(['0xb']) });
    expect(await answers.through(TRADER, ['0xa'], read)).toEqual({ fills: 1 });
    expect(calls.n).toBe(1);
    feed.changed({ wallets: new Set(['0xc', '0xa']) });
    expect(await answers.through(TRADER, ['0xa'], read)).toEqual({ fills: 2 });
    fills = 3;
    feed.changed(EVERYTHING_CHANGED);
    expect(await answers.through(TRADER, ['0xa'], read)).toEqual({ fills: 3 });
    expect(calls.n).toBe(3);
    stop();
  });

  it('shares a read under way with the callers of the same answer, unless the trader changed since it started', async () => {
    const { feed, stop, cache: answers } = followed();
    let fills = 1;
    // Each read waits until released, oldest first.
    const waiting: (() => void)[] = [];
    const release = () => waiting.shift()?.();
    const { calls, read } = counted(async () => {
      const value = { fills };
      await new Promise<void>((resolve) => waiting.push(resolve));
      return value;
    });
    const first = answers.through(TRADER, ['0xa'], read);
    const second = answers.through(TRADER, ['0xa'], read);
    // A look without reading finds the read under way.
    const looked = answers.peek(TRADER, ['0xa']);
    expect(looked).toBeDefined();
    expect(calls.n).toBe(1);
    release();
    expect(await Promise.all([first, second, looked])).toEqual([{ fills: 1 }, { fills: 1 }, { fills: 1 }]);
    expect(calls.n).toBe(1);

    // The trader changes while a read is under way: a later caller reads again.
    feed.changed({ wallets: new Set(['0xa']) });
    fills = 2;
    const stale = answers.through(TRADER, ['0xa'], read);
    feed.changed({ wallets: new Set(['0xa']) });
    fills = 3;
    expect(answers.peek(TRADER, ['0xa'])).toBeUndefined();
    const fresh = answers.through(TRADER, ['0xa'], read);
    expect(calls.n).toBe(3);
    release();
    await stale;
    release();
    expect(await fresh).toEqual({ fills: 3 });
    stop();
  });

  it('looks without reading: nothing kept or under way is undefined, a kept answer is found', async () => {
    const { stop, cache: answers } = followed();
    const { calls, read } = counted(() => ({ fills: 7 }));
    expect(answers.peek(TRADER, ['0xa'])).toBeUndefined();
    expect(calls.n).toBe(0);
    await answers.through(TRADER, ['0xa'], read);
    expect(await answers.peek(TRADER, ['0xa'])).toEqual({ fills: 7 });
    // Other arguments are not the same answer.
    expect(answers.peek(TRADER, ['0xa', 'other'])).toBeUndefined();
    expect(calls.n).toBe(1);
    stop();
    // No worker reports any more: nothing kept counts.
    expect(answers.peek(TRADER, ['0xa'])).toBeUndefined();
  });

  it('drops what changed while it was being read', async () => {
    const { feed, stop, cache: answers } = followed();
    let fills = 1;
    const { calls, read } = counted(() => ({ fills }));
    // The write lands while the first read runs: its answer may predate it.
    const during = async () => {
      const value = await read();
      feed.changed({ wallets: new Set(['0xa']) });
      fills = 2;
      return value;
    };
    expect(await answers.through(TRADER, ['0xa', 'p1'], during)).toEqual({ fills: 1 });
    expect(await answers.through(TRADER, ['0xa', 'p1'], read)).toEqual({ fills: 2 });
    expect(calls.n).toBe(2);
    stop();
  });

  it('reads again after its lifetime however quiet the trader', async () => {
    const { time, stop, cache: answers } = followed();
    let mark = 0.5;
    const { calls, read } = counted(() => ({ mark }));
    expect(await answers.through(TRADER, ['0xa', 1], read)).toEqual({ mark: 0.5 });
    expect(await answers.through(TRADER, ['0xa', 2], read)).toEqual({ mark: 0.5 });
    expect(calls.n).toBe(2);
    mark = 0.6;
    time.advance(4_999);
    expect(await answers.through(TRADER, ['0xa', 1], read)).toEqual({ mark: 0.5 });
    time.advance(2);
    expect(await answers.through(TRADER, ['0xa', 1], read)).toEqual({ mark: 0.6 });
    expect(calls.n).toBe(3);
    stop();
  });

  it("keeps the upstream history through the wallet's other rows, until the provider's rows of the wallet land, at most its lifetime", async () => {
    const { time, feed, stop, cache: answers } = followed();
    let value = 1;
    const { calls, read } = counted(() => ({ value }));
    const kept = () => answers.through(UPSTREAM, ['0xa'], read);
    expect(await kept()).toEqual({ value: 1 });
    value = 2;
    // Long past a trader answer's lifetime, the trader trading all along.
    time.advance(300_000);
    feed.changed({ wallets: new Set(['0xa']) });
    expect(await kept()).toEqual({ value: 1 });
    // The provider's rows of another wallet: still the same.
    feed.changed({ wallets: new Set(['0xb']), upstream: new Set(['0xb']) });
    expect(await kept()).toEqual({ value: 1 });
    expect(calls.n).toBe(1);
    // Of this wallet: read again at once.
    feed.changed({ wallets: new Set(['0xa']), upstream: new Set(['0xa']) });
    expect(await kept()).toEqual({ value: 2 });
    value = 3;
    feed.changed(EVERYTHING_CHANGED);
    expect(await kept()).toEqual({ value: 3 });
    value = 4;
    time.advance(600_001);
    expect(await kept()).toEqual({ value: 4 });
    expect(calls.n).toBe(4);
    stop();
  });

  it('keeps nothing unless a worker reports, nor without a feed (a server store), nor when off', async () => {
    let value = 0;
    const { calls, read } = counted(() => ++value);
    const feed = new StoreChangeFeed();
    const { cache: unreported } = cache({ feed });
    expect(await unreported.through(TRADER, ['0xa'], read)).toBe(1);
    expect(await unreported.through(TRADER, ['0xa'], read)).toBe(2);
    const stop = feed.report();
    const { cache: server } = cache();
    expect(await server.through(TRADER, ['0xa'], read)).toBe(3);
    expect(await server.through(TRADER, ['0xa'], read)).toBe(4);
    const off = { ...TRADER, followedMs: 0 };
    expect(await unreported.through(off, ['0xa'], read)).toBe(5);
    expect(await unreported.through(off, ['0xa'], read)).toBe(6);
    expect(await unreported.through(TRADER, ['0xa'], read)).toBe(7);
    expect(await unreported.through(TRADER, ['0xa'], read)).toBe(7);
    // The worker stops: what it no longer reports can no longer be kept.
    stop();
    expect(await unreported.through(TRADER, ['0xa'], read)).toBe(8);
    expect(await unreported.through(TRADER, ['0xa'], read)).toBe(9);
    expect(calls.n).toBe(9);
  });

  it('keeps a name its short lifetime without a worker, and until a notice names it while one reports', async () => {
    let name = 'alice';
    const { calls, read } = counted(() => name);
    const feed = new StoreChangeFeed();
    const { time, cache: names } = cache({ feed });
    expect(await names.through(NAME, ['0xa'], read)).toBe('alice');
    name = 'alicia';
    time.advance(9_999);
    expect(await names.through(NAME, ['0xa'], read)).toBe('alice');
    time.advance(2);
    expect(await names.through(NAME, ['0xa'], read)).toBe('alicia');
    const stop = feed.report();
    // Read without a worker, it lives its short lifetime; read while one reports, until a notice names it.
    time.advance(10_001);
    expect(await names.through(NAME, ['0xa'], read)).toBe('alicia');
    name = 'al';
    time.advance(60_000);
    // The wallet's fills (no name) and another wallet's name leave it.
    feed.changed({ wallets: new Set(['0xa', '0xb']), named: new Set(['0xb']) });
    expect(await names.through(NAME, ['0xa'], read)).toBe('alicia');
    feed.changed({ wallets: new Set(['0xa']), named: new Set(['0xa']) });
    expect(await names.through(NAME, ['0xa'], read)).toBe('al');
    name = 'alf';
    time.advance(600_001);
    expect(await names.through(NAME, ['0xa'], read)).toBe('alf');
    expect(calls.n).toBe(5);
    stop();
    // Unreported again: the kept name is no longer known to be current.
    name = 'alfred';
    expect(await names.through(NAME, ['0xa'], read)).toBe('alfred');
  });

  it('stops following when closed', async () => {
    const { feed, stop, cache: answers } = followed();
    let value = 0;
    const { read } = counted(() => ++value);
    expect(await answers.through(TRADER, ['0xa'], read)).toBe(1);
    answers.close();
    // It no longer hears the notices: nothing it kept by them counts.
    feed.changed({ wallets: new Set(['0xa']) });
    expect(await answers.through(TRADER, ['0xa'], read)).toBe(2);
    stop();
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

  /** Rankings whose second 100 of 'shape' is computed already. */
  async function rankedAt100() {
    const rankings = new RefreshAhead<string>(10, 1);
    const { started, compute } = computations();
    const initial = rankings.get('shape', 100, compute(100));
    started[0]!.finish('ranking@100');
    await initial;
    return { rankings, started, compute };
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
    const { rankings, started, compute } = await rankedAt100();
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
    const { rankings, started, compute } = await rankedAt100();
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

describe('KeptLookups (callers by key hash, accounts by OAuth subject)', () => {
  /** A lookup whose reads the test finishes, counted per key. */
  function heldLookups(entries: number) {
    const clock = { ms: 0, now: () => clock.ms };
    const reads: { key: string; finish: (value: string) => void }[] = [];
    const lookups = new KeptLookups<string>(
      entries,
      10_000,
      (key) => new Promise<string>((resolve) => reads.push({ key, finish: resolve })),
      { clock },
    );
    return { clock, reads, lookups };
  }

  it('keeps each key on its own: concurrent callers of a key share one read, another key reads apart', async () => {
    const { reads, lookups } = heldLookups(10);
    const first = [lookups.get('a'), lookups.get('a'), lookups.get('a')];
    const other = lookups.get('b');
    expect(reads.map((read) => read.key)).toEqual(['a', 'b']);
    reads[0]!.finish('caller a');
    reads[1]!.finish('caller b');
    expect(await Promise.all(first)).toEqual(['caller a', 'caller a', 'caller a']);
    expect(await other).toBe('caller b');
    expect(await lookups.get('a')).toBe('caller a');
    expect(reads).toHaveLength(2);
  });

  it('reads a key again behind its callers in the second half of the window, and waits past it', async () => {
    const { clock, reads, lookups } = heldLookups(10);
    const first = lookups.get('a');
    reads[0]!.finish('v1');
    await first;
    clock.ms = 6_000;
    expect(await lookups.get('a')).toBe('v1');
    expect(reads).toHaveLength(2);
    reads[1]!.finish('v2 (revoked)');
    await new Promise((resolve) => setImmediate(resolve));
    expect(await lookups.get('a')).toBe('v2 (revoked)');
    clock.ms = 6_000 + 10_000;
    let answered: string | undefined;
    const late = lookups.get('a').then((value) => (answered = value));
    await new Promise((resolve) => setImmediate(resolve));
    expect(answered).toBeUndefined();
    reads[2]!.finish('v3');
    await late;
    expect(answered).toBe('v3');
  });

  it('keeps at most its entries, dropping the least recently used', async () => {
    const { reads, lookups } = heldLookups(2);
    for (const key of ['a', 'b', 'c']) {
      const kept = lookups.get(key);
      reads.at(-1)!.finish(key);
      await kept;
    }
    expect(reads).toHaveLength(3);
    await Promise.all([lookups.get('b'), lookups.get('c')]);
    expect(reads).toHaveLength(3);
    const again = lookups.get('a');
    expect(reads).toHaveLength(4);
    reads[3]!.finish('a again');
    expect(await again).toBe('a again');
  });
});

import { ReadCache } from './read-cache.ts';
import { Reader } from './reads.ts';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../config.ts';
import { createLogger } from '../log.ts';
import type { QueryParams, Store } from '../projections/store.ts';
import type { Caller } from './auth.ts';
import { admitCall, resolveTrader, traderCallOf, traderOf, type AdmittedCall, type RouteContext } from './context.ts';
import { Cursors } from './cursors.ts';
import { ApiError } from './errors.ts';
import type { Admission, Budget, CallShape } from './gates/budget.ts';
import { InFlightLimiter } from './gates/in-flight.ts';

const config = parseConfig({});
const ALICE = `0x${'a1'.repeat(20)}`;
const BOB = `0x${'b2'.repeat(20)}`;
const USAGE = {
  window: { tokens_remaining: 1, rpm_used: 1 },
  day: { requests: 1, cap: 50 },
  month: { requests: 0, cap: 0 },
};
const caller: Caller = {
  accountId: 'acct',
  keyId: 'k',
  label: 'l',
  last4: 'abcd',
  planId: 'basic',
  limits: config.plans.basic,
};

/** A store that knows the current names of a few wallets, and records what it was asked. */
function namesStore(names: Record<string, string>, failNameReads = false) {
  const asked: QueryParams[] = [];
  const store = {
    database: 'unit',
    kind: 'server',
    async query<Row>(_sql: string, params: QueryParams = {}): Promise<Row[]> {
      asked.push(params);
      if ('name' in params) {
        const wanted = String(params.name).toLowerCase();
        const found = Object.entries(names).find(([, name]) => name.toLowerCase() === wanted);
        return (found ? [{ wallet: found[0], name: found[1] }] : []) as Row[];
      }
      if (failNameReads) throw new Error('store down');
      const name = names[String(params.wallet)];
      return (name === undefined ? [] : [{ name }]) as Row[];
    },
  } as unknown as Store;
  return { store, asked };
}

/** A budget that admits everything, recording the calls and the releases of their admissions. */
function recordingBudget() {
  const calls: CallShape[] = [];
  let releases = 0;
  const budget = {
    async admit(_caller: Caller, call: CallShape): Promise<Admission> {
      calls.push(call);
      return { usage: USAGE, release: () => (releases += 1), refund: () => Promise.resolve() };
    },
  } as unknown as Budget;
  return { budget, calls, releases: () => releases };
}

/** The store's reads through a cache of their own (names are kept: each test builds its own). */
const readerOf = (store: Store) =>
  new Reader(store, new ReadCache({ bytes: 0, smallEntries: 1000 }), config.api.readCache);

function context(store: Store, budget: Budget): RouteContext {
  const reader = readerOf(store);
  return {
    config,
    store,
    reader,
    budget,
    log: createLogger('silent'),
    cursors: new Cursors('x'.repeat(16)),
    now: () => 0,
    resolveTrader: (id) => resolveTrader(reader, id),
    inFlight: new InFlightLimiter({
      initialInFlight: 1000,
      minInFlight: 1000,
      baselineInFlight: 1000,
      maxInFlight: 1000,
      queueDepth: 0,
      maxQueueWaitMs: 0,
      burstQueueWaitMs: 0,
      targetQueueWaitMs: 0,
      refusalWindowMs: 0,
    }),
  };
}

describe('admitCall', () => {
  it('parses a wallet or profile URL without a lookup, counts it lower-cased, then reads its name', async () => {
    const { store, asked } = namesStore({ [ALICE]: 'Alice' });
    const { budget, calls } = recordingBudget();
    const admitted = await admitCall(context(store, budget), caller, {
      address: '1.2.3.4',
      trader: ALICE.toUpperCase().replace('0X', '0x'),
      heavy: false,
    });
    expect(calls).toEqual([{ address: '1.2.3.4', wallet: ALICE, heavy: false }]);
    expect(await traderOf(admitted)).toEqual({ wallet: ALICE, name: 'Alice' });
    expect(admitted.traderRefusal).toBeNull();
    expect(asked).toEqual([{ wallet: ALICE }]);
    const viaUrl = await admitCall(context(store, budget), caller, {
      address: '1.2.3.4',
      trader: `https://polymarket.com/profile/${ALICE}`,
      heavy: false,
    });
    expect(await traderOf(viaUrl)).toEqual({ wallet: ALICE, name: 'Alice' });
  });

  it('looks a display name up before the gates (it has no wallet until then)', async () => {
    const { store } = namesStore({ [BOB]: 'Bob Trades' });
    const { budget, calls } = recordingBudget();
    const admitted = await admitCall(context(store, budget), caller, {
      address: 'a',
      trader: 'bob trades',
      heavy: true,
    });
    expect(calls).toEqual([{ address: 'a', wallet: BOB, heavy: true }]);
    expect(await traderOf(admitted)).toEqual({ wallet: BOB, name: 'Bob Trades' });
  });

  it('still admits (and so counts) a call whose trader does not resolve, keeping the refusal for the route', async () => {
    const { store } = namesStore({});
    const { budget, calls } = recordingBudget();
    const badWallet = await admitCall(context(store, budget), caller, { address: 'a', trader: '0x1234', heavy: false });
    expect(badWallet.traderRefusal).toMatchObject({ status: 400, code: 'invalid_wallet' });
    const unknownName = await admitCall(context(store, budget), caller, {
      address: 'a',
      trader: 'nobody',
      heavy: false,
    });
    expect(unknownName.traderRefusal).toMatchObject({ status: 404, code: 'trader_not_found' });
    expect(calls.map((call) => call.wallet)).toEqual([null, null]);
    await expect(traderOf(badWallet)).rejects.toThrow(ApiError);
  });

  it('admits a call that is not trader-scoped with no wallet and no trader', async () => {
    const { store, asked } = namesStore({});
    const { budget, calls } = recordingBudget();
    const admitted = await admitCall(context(store, budget), caller, { address: 'a', heavy: false });
    expect(calls).toEqual([{ address: 'a', wallet: null, heavy: false }]);
    expect(admitted.trader).toBeNull();
    expect(asked).toEqual([]);
  });

  it('releases the admission when the caller goes away, before or after it was admitted', async () => {
    const { store } = namesStore({ [ALICE]: 'Alice' });
    const early = recordingBudget();
    const gone = new AbortController();
    gone.abort();
    await admitCall(context(store, early.budget), caller, {
      address: 'a',
      trader: ALICE,
      heavy: true,
      signal: gone.signal,
    });
    expect(early.releases()).toBe(1);
    const late = recordingBudget();
    const connection = new AbortController();
    await admitCall(context(store, late.budget), caller, {
      address: 'a',
      trader: ALICE,
      heavy: true,
      signal: connection.signal,
    });
    expect(late.releases()).toBe(0);
    connection.abort();
    expect(late.releases()).toBe(1);
  });

  it('reads the name beside the operation: a failure to read it fails the operation, whose route releases the call', async () => {
    const { store } = namesStore({}, true);
    const { budget, releases } = recordingBudget();
    const admitted = await admitCall(context(store, budget), caller, { address: 'a', trader: ALICE, heavy: true });
    // The wallet is known at once; the name is awaited by the operation (the card with its own reads).
    expect(traderCallOf(admitted).wallet).toBe(ALICE);
    await expect(traderOf(admitted)).rejects.toThrow('store down');
    expect(releases()).toBe(0);
    admitted.release();
    expect(releases()).toBe(1);
  });
});

describe('resolveTrader and traderOf', () => {
  it('resolveTrader answers the canonical wallet and name, or the contract refusal', async () => {
    const { store: names } = namesStore({ [ALICE]: 'Alice' });
    const store = readerOf(names);
    expect(await resolveTrader(store, ALICE)).toEqual({ wallet: ALICE, name: 'Alice' });
    expect(await resolveTrader(store, BOB)).toEqual({ wallet: BOB, name: '' });
    expect(await resolveTrader(store, 'ALICE')).toEqual({ wallet: ALICE, name: 'Alice' });
    await expect(resolveTrader(store, `0x${'a'.repeat(39)}`)).rejects.toMatchObject({
      status: 400,
      code: 'invalid_wallet',
    });
    await expect(resolveTrader(store, 'Carol')).rejects.toMatchObject({ status: 404, code: 'trader_not_found' });
  });

  it('traderOf refuses a route that was not admitted as trader-scoped', async () => {
    await expect(traderOf(null)).rejects.toThrow(/budget.traderScoped/);
    const noTrader = { usage: USAGE, release: () => {}, trader: null, traderRefusal: null } as AdmittedCall;
    await expect(traderOf(noTrader)).rejects.toThrow(/without a trader/);
    expect(() => traderCallOf(noTrader)).toThrow(/without a trader/);
  });
});

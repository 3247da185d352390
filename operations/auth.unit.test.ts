import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../config.ts';
import type { Store } from '../projections/store.ts';
import { Authenticator } from './auth.ts';

const KEY = 'ta_unit_key_0123456789';
const SHA = createHash('sha256').update(KEY).digest('hex');
const config = parseConfig({});
const WINDOW_MS = config.api.keyCacheSeconds * 1000;

/** A keys projection with one key, whose lookups the test answers one by one. */
function keysStore() {
  const state = { revoked: false, lookups: 0, pending: [] as (() => void)[] };
  const store = {
    database: 'unit',
    kind: 'embedded',
    query: async <Row>(): Promise<Row[]> => {
      state.lookups += 1;
      const revoked = state.revoked;
      await new Promise<void>((answer) => state.pending.push(answer));
      const row = {
        key_sha256: SHA,
        key_id: 'k1',
        account_id: 'a1',
        label: 'unit',
        last4: KEY.slice(-4),
        revoked: revoked ? 1 : 0,
        plan: 'pro',
        founder: 0,
        display_name: 'Unit',
        deleted: 0,
      };
      return [row as Row];
    },
  } as unknown as Store;
  const answerAll = () => {
    for (const answer of state.pending.splice(0)) answer();
  };
  return { store, state, answerAll };
}

/** A key looked up once (at the clock's start), then revoked in the store. */
async function lookedUpThenRevoked() {
  const { store, state, answerAll } = keysStore();
  const clock = { ms: 1_000_000 };
  const auth = new Authenticator(store, config, () => clock.ms);
  const first = auth.authenticate(`Bearer ${KEY}`, {});
  answerAll();
  await first;
  state.revoked = true;
  return { auth, clock, state, answerAll };
}

describe('Authenticator: the key lookup cache', () => {
  it('concurrent requests of one key share one lookup; in the window, none asks the store', async () => {
    const { store, state, answerAll } = keysStore();
    const clock = { ms: 1_000_000 };
    const auth = new Authenticator(store, config, () => clock.ms);
    const calls = Array.from({ length: 5 }, () => auth.authenticate(`Bearer ${KEY}`, {}));
    expect(state.lookups).toBe(1);
    answerAll();
    for (const caller of await Promise.all(calls)) expect(caller).toMatchObject({ accountId: 'a1', planId: 'pro' });
    clock.ms += WINDOW_MS / 2 - 1;
    await auth.authenticate(`Bearer ${KEY}`, {});
    expect(state.lookups).toBe(1);
  });

  it('in the second half of the window a key is answered from the cache while its next lookup runs; a revocation then holds', async () => {
    const { auth, clock, state, answerAll } = await lookedUpThenRevoked();
    clock.ms += WINDOW_MS / 2;
    // Answered while the store has not answered the next lookup (it never waits for it).
    expect(await auth.authenticate(`Bearer ${KEY}`, {})).toMatchObject({ accountId: 'a1' });
    expect(state.lookups).toBe(2);
    expect(state.pending).toHaveLength(1);
    answerAll();
    await new Promise((resolve) => setImmediate(resolve));
    await expect(auth.authenticate(`Bearer ${KEY}`, {})).rejects.toMatchObject({ status: 401, code: 'unauthorized' });
  });

  it('never serves a lookup older than the window: past it, the request waits for a new one', async () => {
    const { auth, clock, state, answerAll } = await lookedUpThenRevoked();
    clock.ms += WINDOW_MS;
    const late = auth.authenticate(`Bearer ${KEY}`, {});
    expect(state.lookups).toBe(2);
    answerAll();
    await expect(late).rejects.toMatchObject({ status: 401 });
  });
});

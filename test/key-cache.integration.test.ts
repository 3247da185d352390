/**
 * The key revocation window with its production value (api.keyCacheSeconds, read from the parsed config): a key
 * looked up once keeps working from the lookup cache until the window ends, even after it was revoked,
 * and is refused from the first millisecond after. The cache's clock is the test's; the revocation is a
 * keys event landed through the pipeline, as `keys revoke` publishes it.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { withPublisher } from '../roles/runtime.ts';
import { mintApiKey, publishAccount } from '../ingest/sources/accounts.ts';
import { createLogger } from '../log.ts';
import { API, bodyOf, inProcessConfig, publishPlanKeys, startTestApi, type TestApi } from './harness/api.ts';

const NOW = 1_795_000_000;
// No override: the production value is what is tested.
const config = inProcessConfig('key_cache');
const WINDOW_MS = config.api.keyCacheSeconds * 1000;
const clock = { ms: Date.UTC(2026, 10, 23, 12) };
const key = mintApiKey();
const keyEvent = (revokedAt: number | null, version: number) => ({
  key_id: key.keyId,
  account_id: 'cache-user',
  key_sha256: key.sha256,
  label: 'cache test',
  last4: key.last4,
  created_at: NOW,
  revoked_at: revokedAt,
  version,
});

let api: TestApi;

beforeAll(async () => {
  const keys = await publishPlanKeys(config, NOW);
  await withPublisher(config, createLogger('error'), async ({ publisher }) => {
    await publishAccount(publisher, { accountId: 'cache-user', plan: 'pro', displayName: 'Cache user', version: NOW });
    await publisher.publish('keys', [keyEvent(null, NOW)]);
  });
  api = await startTestApi(config, { now: () => NOW, keys, authClockMs: () => clock.ms });
});

afterAll(async () => {
  await api?.store.command('DROP DATABASE IF EXISTS {db:Identifier}');
  await api?.close();
});

const me = () => api.get(`${API}/me`, { authorization: `Bearer ${key.plaintext}` });

describe(`revocation takes effect when the key cache window (api.keyCacheSeconds, ${config.api.keyCacheSeconds} s) ends`, () => {
  it('a revoked key works until the window of its lookup ends and is refused right after', async () => {
    expect(WINDOW_MS).toBeGreaterThan(0);
    const lookedUpAt = clock.ms;
    const first = await me();
    expect(first.statusCode).toBe(200);
    expect(bodyOf(first)).toMatchObject({ key: { last4: key.last4 } });

    await withPublisher(config, createLogger('error'), async ({ publisher }) => {
      await publisher.publish('keys', [keyEvent(NOW + 60, NOW + 60)]);
    });
    // The revocation is in the store (a fresh lookup would refuse it)…
    const [stored] = await api.store.query<{ revoked_at: number | null }>(
      'SELECT revoked_at FROM {db:Identifier}.api_keys FINAL WHERE key_id = {key_id:String}',
      { key_id: key.keyId },
    );
    expect(stored?.revoked_at).toBe(NOW + 60);

    // …but the lookup is cached: served until the last millisecond of the window.
    clock.ms = lookedUpAt + WINDOW_MS - 1;
    expect((await me()).statusCode).toBe(200);

    // The window has ended: looked up again, refused, and refused from then on.
    clock.ms = lookedUpAt + WINDOW_MS;
    const refused = await me();
    expect(refused.statusCode).toBe(401);
    expect(bodyOf(refused)).toMatchObject({ error: 'unauthorized' });
    clock.ms = lookedUpAt + 2 * WINDOW_MS;
    expect((await me()).statusCode).toBe(401);
  });
});

/**
 * The OpenAPI document is the contract agents code against: it must change only on purpose. The app is
 * built on the default configuration over a stand-in store that knows one key (the document is free but
 * authenticated, and reads nothing else), and its `/openapi.json` bytes are compared with the committed
 * snapshot. After an intended change of the API, rewrite the snapshot with `UPDATE_OPENAPI_SNAPSHOT=1`.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../config.ts';
import { createLogger } from '../log.ts';
import type { Store } from '../projections/store.ts';
import { buildApp } from './app.ts';

const SNAPSHOT = new URL('./openapi.snapshot.json', import.meta.url);
const KEY = 'tak_openapi_snapshot_test_key_0000000000000';

/** Answers every query with the one key row (the only read a free call makes is the key lookup). */
function keyOnlyStore(): Store {
  const row = {
    key_sha256: createHash('sha256').update(KEY).digest('hex'),
    key_id: 'key_snapshot',
    account_id: 'snapshot',
    label: 'snapshot',
    last4: KEY.slice(-4),
    revoked: 0,
    plan: 'pro',
    founder: 0,
    display_name: 'Snapshot',
    deleted: 0,
  };
  return {
    database: 'snapshot',
    kind: 'server',
    query: async <Row>() => [row] as Row[],
    command: async () => {},
    insert: async () => {},
    insertJsonLines: async () => {},
    ensureDatabase: async () => {},
    close: async () => {},
  };
}

describe('/openapi.json', () => {
  it('is byte for byte the committed snapshot', async () => {
    const config = parseConfig({});
    const app = await buildApp({
      log: createLogger('silent'),
      storeAlive: async () => true,
      readiness: () => ({ ready: true, detail: {} }),
      api: { config, store: keyOnlyStore() },
    });
    try {
      const response = await app.inject({
        method: 'GET',
        url: `${config.api.prefix}/openapi.json`,
        headers: { authorization: `Bearer ${KEY}` },
      });
      expect(response.statusCode).toBe(200);
      if (process.env.UPDATE_OPENAPI_SNAPSHOT === '1') writeFileSync(SNAPSHOT, response.body);
      expect(JSON.parse(response.body)).toMatchObject({ openapi: '3.1.0' });
      expect(response.body).toBe(readFileSync(SNAPSHOT, 'utf8'));
    } finally {
      await app.close();
    }
  });
});

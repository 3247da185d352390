import { describe, expect, it } from 'vitest';
import { parseConfig } from '../config.ts';
import { createLogger } from '../log.ts';
import type { Store } from '../projections/store.ts';
import { buildHttpServer } from './http-server.ts';

/** A store that fails every read: the index reads nothing. */
const unreadableStore: Store = {
  database: 'index',
  kind: 'server',
  query: async () => {
    throw new Error('the index must not read the store');
  },
  command: async () => {},
  insert: async () => {},
  insertJsonLines: async () => {},
  ensureDatabase: async () => {},
  close: async () => {},
};

describe('GET /', () => {
  it('answers a short index without a key: the API, its OpenAPI document, MCP, the probes, keys and docs', async () => {
    const config = parseConfig({});
    const app = await buildHttpServer({
      log: createLogger('silent'),
      storeAlive: async () => true,
      readiness: () => ({ ready: true, detail: {} }),
      api: { config, store: unreadableStore },
    });
    try {
      const response = await app.inject({ method: 'GET', url: '/' });
      expect(response.statusCode).toBe(200);
      expect(response.headers['content-type']).toMatch(/^application\/json/);
      const body = response.json();
      expect(body.name).toBe('Trader Analytics');
      expect(body.links).toEqual({
        rest: '/api/agent/v1',
        openapi: '/api/agent/v1/openapi.json',
        mcp: '/mcp',
        healthz: '/healthz',
        readyz: '/readyz',
        metrics: '/metrics',
      });
      expect(body.auth).toContain('Authorization: Bearer <key>');
      expect(body.keys.demo).toContain('npm start');
      expect(body.keys.operators).toMatch(
        /^npx tsx main\.ts keys mint --user <account_id> --plan basic\|pro\|max --label <label>/,
      );
      expect(Object.values(body.docs).join(' ')).toMatch(/README\.md.*docs\//);
      // Every link leads somewhere: the probes and metrics answer, the OpenAPI document asks for a key.
      for (const path of [body.links.healthz, body.links.readyz, body.links.metrics])
        expect((await app.inject({ method: 'GET', url: path })).statusCode, path).toBe(200);
      expect((await app.inject({ method: 'GET', url: body.links.openapi })).statusCode).toBe(401);
      expect((await app.inject({ method: 'POST', url: body.links.mcp, payload: {} })).statusCode).toBe(401);
    } finally {
      await app.close();
    }
  });

  it('is not part of the app without the read API (probes only)', async () => {
    const app = await buildHttpServer({
      log: createLogger('silent'),
      storeAlive: async () => true,
      readiness: () => ({ ready: true, detail: {} }),
    });
    try {
      expect((await app.inject({ method: 'GET', url: '/' })).statusCode).toBe(404);
    } finally {
      await app.close();
    }
  });
});

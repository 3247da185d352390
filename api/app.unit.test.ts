import { describe, expect, it } from 'vitest';
import { createLogger } from '../log.ts';
import { buildApp, type Readiness } from './app.ts';

describe('health and readiness', () => {
  it('is live at once, ready only when the store answers and the data is in', async () => {
    let readiness: Readiness = { ready: false, detail: { phase: 'backfill' } };
    let storeAlive = true;
    const app = await buildApp({
      log: createLogger('silent'),
      storeAlive: async () => storeAlive,
      readiness: () => readiness,
    });

    expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    const starting = await app.inject({ method: 'GET', url: '/readyz' });
    expect(starting.statusCode).toBe(503);
    expect(starting.json()).toMatchObject({ status: 'starting', phase: 'backfill' });

    readiness = { ready: true, detail: { events_ingested: 42 } };
    const ready = await app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    expect(ready.json()).toEqual({ status: 'ready', store: 'ok', events_ingested: 42 });

    storeAlive = false;
    const storeDown = await app.inject({ method: 'GET', url: '/readyz' });
    expect(storeDown.statusCode).toBe(503);
    expect(storeDown.json()).toMatchObject({ store: 'unreachable' });
    await app.close();
  });
});

/**
 * A watched loop that stops advancing makes its process's /healthz 503, on the app's probes (the all and
 * api roles) as on the workers' metrics port; a loop that advances, or that stopped on purpose, does not.
 */
import { describe, expect, it } from 'vitest';
import { createLogger } from '../log.ts';
import { buildHttpServer } from './http-server.ts';
import { stalledLoops, watchLoop } from '../metrics/progress.ts';

describe('watched loops', () => {
  it('are stalled past their period by their own clock, and no longer watched once stopped', async () => {
    let now = 1_000;
    const watch = watchLoop('archive', 500, () => now);
    const app = await buildHttpServer({
      log: createLogger('silent'),
      storeAlive: async () => true,
      readiness: () => ({ ready: true, detail: {} }),
    });
    try {
      now += 500;
      expect(stalledLoops()).toEqual([]);
      expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
      now += 1;
      expect(stalledLoops()).toEqual([{ loop: 'archive', periodMs: 500, sinceMs: 501 }]);
      const stalled = await app.inject({ method: 'GET', url: '/healthz' });
      expect(stalled.statusCode).toBe(503);
      expect(stalled.json()).toEqual({ status: 'stalled', loops: [{ loop: 'archive', periodMs: 500, sinceMs: 501 }] });
      watch.advanced();
      expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
      now += 10_000;
      watch.stop();
      expect((await app.inject({ method: 'GET', url: '/healthz' })).statusCode).toBe(200);
    } finally {
      await app.close();
    }
  });
});

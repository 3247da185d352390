/**
 * A poller whose loop stops advancing (here: a publish that never settles, as an answer that never ends
 * would leave it) makes the worker's /healthz answer 503 naming the loop, once its period has passed;
 * before that, and for a loop that advances, /healthz is 200.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { parseConfig } from '../../../config.ts';
import { createLogger } from '../../../log.ts';
import { startMetricsServer, type MetricsServer } from '../../../metrics/server.ts';
import type { EventSink } from '../../publisher.ts';
import { UpstreamHttpClient } from './http-client.ts';
import { UpstreamPoller } from './poller.ts';
import { MemoryRequestedWallets } from './requests.ts';
import { MemoryStateStore } from './state.ts';
import { scriptedFetch, VirtualClock } from './test-support.ts';

let metrics: MetricsServer | undefined;
afterEach(async () => {
  await metrics?.close();
  metrics = undefined;
});

describe('the poller’s progress, as /healthz reports it', () => {
  it('a loop stuck on one step keeps /healthz at 200 within its period, then turns it into 503 naming the loop', async () => {
    const config = parseConfig({}).upstream;
    const clock = new VirtualClock(Date.now());
    const http = new UpstreamHttpClient({
      ...config,
      clock,
      fetch: scriptedFetch(() => new Response('OK')),
    });
    let reached: () => void = () => {};
    const stuck = new Promise<void>((resolve) => {
      reached = resolve;
    });
    // The first publish (the first heartbeat) never settles: the loop cannot advance past it.
    const sink: EventSink = {
      publish: () => {
        reached();
        return new Promise<void>(() => {});
      },
    };
    const poller = new UpstreamPoller({
      http,
      sink,
      state: new MemoryStateStore(),
      config,
      clock,
      log: createLogger('silent'),
      requested: new MemoryRequestedWallets(),
      reject: async () => {},
    });
    metrics = await startMetricsServer({ host: '127.0.0.1', port: 0 });
    const health = async () => {
      const response = await fetch(`http://127.0.0.1:${metrics!.port}/healthz`);
      return { status: response.status, body: (await response.json()) as Record<string, unknown> };
    };

    const stop = new AbortController();
    void poller.run(stop.signal);
    await stuck;
    expect((await health()).status).toBe(200);
    clock.advance(5 * config.heartbeatSeconds * 1000 + 1);
    const stalled = await health();
    expect(stalled.status).toBe(503);
    expect(stalled.body).toMatchObject({ status: 'stalled', loops: [{ loop: 'upstream poller' }] });
    stop.abort();
  });
});

/**
 * The node's Retry-After is honoured: a 429 that names a wait is retried no sooner than it asked, whatever
 * our own backoff would have chosen.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createLogger } from '../../../log.ts';
import { LocalPolygonNode } from '../../../test/harness/polygon-node.ts';
import { PolygonRpc } from './rpc.ts';

let node: LocalPolygonNode | undefined;
afterEach(async () => node?.stop());

describe('PolygonRpc retries', () => {
  it('waits out the Retry-After of a 429 before asking again (our backoff alone would ask at once)', async () => {
    node = new LocalPolygonNode();
    node.setBlock(10, 1_777_400_000, []);
    node.retryAfter = '1';
    node.fault = (_call, serial) => (serial === 1 ? '429' : null);
    await node.start();
    const rpc = new PolygonRpc(
      { urls: [node.url], requestsPerSecond: 1000, retries: 2, retryBaseMs: 1, retryMaxMs: 1, timeoutMs: 5_000 },
      createLogger('silent'),
    );
    expect(await rpc.blockNumber()).toBe(10);
    expect(node.calls.map((call) => call.method)).toEqual(['eth_blockNumber', 'eth_blockNumber']);
    // Measured between the two arrivals: the first is stamped just before its answer left.
    expect(node.callTimes[1]! - node.callTimes[0]!).toBeGreaterThanOrEqual(950);
    expect(rpc.stats.retries).toBe(1);
  });
});

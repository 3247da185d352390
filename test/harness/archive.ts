/**
 * Shared steps of the archive's tests and benchmark: serving a generated world from the local node, the
 * archive's test configuration, the upstream's market metadata, and the comparison of every REST figure with
 * the reference computed from the generator's own records.
 */
import { expect } from 'vitest';
import type { Config, ConfigOverrides } from '../../config.ts';
import { withPublisher } from '../../roles/runtime.ts';
import { createLogger } from '../../log.ts';
import { bodyOf, type TestApi } from './api.ts';
import { reference, type ChainWorld } from './chain-world.ts';
import type { LocalPolygonNode } from './polygon-node.ts';

export function archiveEnvironment(node: LocalPolygonNode, extra: Record<string, string>): Record<string, string> {
  return {
    POLYGON_RPC_URL: node.url,
    ARCHIVE_RPS: '2000',
    ARCHIVE_CONFIRMATIONS: '0',
    // The archive's earlier tests read every block at once as final (depth 0): the head stage has nothing above it.
    ARCHIVE_FINALIZED: 'false',
    // Small ingest batches: each range is durable (ingested) before its checkpoint; a test should not wait on lingering.
    INGEST_LINGER_MS: '20',
    ...extra,
  };
}

type ArchiveOverrides = NonNullable<ConfigOverrides['archive']>;

/** The archive's test settings on the parsed config (constants in production), with a test's own on top. */
export function archiveOverrides(archive: ArchiveOverrides = {}): ConfigOverrides {
  return {
    // A local node: fast retries, polls and timeouts.
    archive: { retries: 12, retryBaseMs: 5, retryMaxMs: 200, pollMs: 20, timeoutMs: 2000, v2StartTs: 0, ...archive },
    ingest: { rollupIntervalMs: 50 },
    // The generated chain's times: a cut-over at 0 makes every leg on it of the V2 era the card covers (its fills are V2 exchanges').
    exchangeV2StartTs: 0,
    upstream: { v2StartTs: 0 },
  };
}

export function serveWorld(node: LocalPolygonNode, world: ChainWorld): void {
  for (let block = world.firstBlock; block <= world.lastBlock; block++)
    node.setBlock(block, world.timestampOf(block), world.blocks.get(block) ?? []);
}

/** Market metadata, as the upstream poller would publish it (the chain has no titles). */
export async function publishMetadata(config: Config, world: ChainWorld): Promise<void> {
  await withPublisher(config, createLogger('error'), async ({ publisher }) => {
    await publisher.publish(
      'markets',
      world.markets.map((market, index) => ({
        type: 'metadata' as const,
        condition_id: market.conditionId,
        title: `Generated market ${index}`,
        outcome1: 'Yes',
        outcome2: 'No',
        title_start_ts: null,
        version: 1,
      })),
    );
  });
}

/** Every figure the reference knows, read through REST, for every wallet of the world. */
export async function expectProjectionsEqualReference(api: TestApi, world: ChainWorld): Promise<void> {
  const expected = reference(world);
  expect(expected.size).toBeGreaterThan(5);
  for (const [wallet, markets] of expected) {
    const card = bodyOf(await api.get(`traders/${wallet}`)) as {
      card: { markets_total: number; resolved_total: number; volume_usd: number };
    };
    const all = [...markets.values()];
    expect(card.card.markets_total, wallet).toBe(all.length);
    expect(card.card.resolved_total, wallet).toBe(all.filter((market) => market.resolved).length);
    expect(card.card.volume_usd).toBeCloseTo(
      all.reduce((sum, market) => sum + market.buyUsd + market.sellUsd, 0),
      6,
    );

    const list = bodyOf(await api.get(`traders/${wallet}/markets?limit=1000`)) as {
      markets: Array<{
        condition_id: string;
        pnl_usd: number;
        fills_count: number;
        volume_usd: number;
        resolved: boolean;
        winner: string | null;
        last_traded_at: number;
      }>;
    };
    expect(list.markets.length, wallet).toBe(markets.size);
    for (const row of list.markets) {
      const want = markets.get(row.condition_id)!;
      expect(want, `${wallet} ${row.condition_id}`).toBeDefined();
      expect(row.fills_count).toBe(want.fills);
      expect(row.volume_usd).toBeCloseTo(want.buyUsd + want.sellUsd, 6);
      expect(row.resolved).toBe(want.resolved);
      expect(row.pnl_usd, `${wallet} ${row.condition_id} pnl`).toBeCloseTo(want.pnlUsd, 6);
      expect(row.last_traded_at).toBe(want.lastTs);
      const market = world.markets.find((candidate) => candidate.conditionId === row.condition_id)!;
      const winner =
        market.payouts === null
          ? null
          : market.payouts[0] === market.payouts[1]
            ? '50/50'
            : market.payouts[0] > 0
              ? 'Yes'
              : 'No';
      expect(row.winner).toBe(winner);
    }
    const [conditionId, want] = [...markets.entries()].find(([, market]) => market.fills > 0) ?? [];
    if (conditionId && want) {
      const summary = bodyOf(await api.get(`traders/${wallet}/markets/${conditionId}/summary`)) as {
        summary: { fills_count: number; buy_usd: number; sell_usd: number; pnl_usd: number };
      };
      expect(summary.summary.fills_count).toBe(want.fills);
      expect(summary.summary.buy_usd).toBeCloseTo(want.buyUsd, 6);
      expect(summary.summary.sell_usd).toBeCloseTo(want.sellUsd, 6);
      expect(summary.summary.pnl_usd).toBeCloseTo(want.pnlUsd, 6);
    }
    const fills = bodyOf(await api.get(`traders/${wallet}/fills?since=0&limit=2000`)) as {
      fills: Array<{ usd: number; side: string; size_tokens: number; ts: number }>;
    };
    const worldFills = world.fills.filter((fill) => fill.wallet === wallet);
    expect(fills.fills.length, `${wallet} fills`).toBe(worldFills.length);
    expect(fills.fills.reduce((sum, fill) => sum + fill.usd, 0)).toBeCloseTo(
      worldFills.reduce((sum, fill) => sum + Number(fill.usdMicro) / 1e6, 0),
      6,
    );
    expect(fills.fills.reduce((sum, fill) => sum + fill.size_tokens, 0)).toBeCloseTo(
      worldFills.reduce((sum, fill) => sum + Number(fill.tokensMicro) / 1e6, 0),
      6,
    );
  }
}

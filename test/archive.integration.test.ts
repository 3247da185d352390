/**
 * The on-chain archive end to end, without a network: a local JSON-RPC node serves logs (recorded real ones,
 * and a generated world encoded with viem) → `archive` → topics (in-process log) → ingest → the REST card,
 * markets list, summary and fills, compared with a reference computed here from the generator's own records.
 * Then the same world through a node that fails in every way an endpoint does (errors, 429s, range refusals,
 * timeouts, hang-ups, going away mid-backfill) while a reorg replaces every block that is not yet deep.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../config.ts';
import { withPublisher } from '../roles/runtime.ts';
import type { RawLog } from '../ingest/sources/archive/decode.ts';
import { runArchive } from '../roles/archive.ts';
import { createLogger } from '../log.ts';
import { openStore } from '../projections/store.ts';
import {
  API,
  bodyOf,
  gatesNeverBind,
  inProcessConfig,
  publishPlanKeys,
  startTestApi,
  type TestApi,
} from './harness/api.ts';
import {
  archiveEnvironment,
  archiveOverrides,
  expectProjectionsEqualReference,
  publishMetadata,
  serveWorld,
} from './harness/archive.ts';
import { CONTRACTS, generateWorld, v2OrderFilled } from './harness/chain-world.ts';
import { POLYMARKET_PROTOCOL_V2 } from '../chain.ts';
import { LocalPolygonNode } from './harness/polygon-node.ts';
import { pad, toHex, type Hex } from 'viem';
import { makeFill, makeWallet } from './factories.ts';

const ONCHAIN = path.resolve(import.meta.dirname, '../../shared/data/polymarket/onchain');
const NOW = Math.floor(Date.now() / 1000);

describe('archive: local node → topics → projections → REST', () => {
  const nodes: LocalPolygonNode[] = [];
  const apis: TestApi[] = [];
  afterAll(async () => {
    for (const api of apis) {
      await api.store.command('DROP DATABASE IF EXISTS {db:Identifier}');
      await api.close();
    }
    for (const node of nodes) await node.stop();
  });

  async function startNode(): Promise<LocalPolygonNode> {
    const node = new LocalPolygonNode();
    await node.start();
    nodes.push(node);
    return node;
  }

  async function apiFor(config: Config): Promise<TestApi> {
    const keys = await publishPlanKeys(config, NOW - 86_400);
    const api = await startTestApi(config, { now: () => NOW, keys, gatesClockMs: gatesNeverBind() });
    apis.push(api);
    return api;
  }

  // A third of the markets are Protocol V2 markets (ExchangeV3 fills, BinaryModule legs and resolutions).
  const world = generateWorld({ seed: 15, markets: 12, wallets: 10, matches: 140, v2Every: 3 });

  it('a generated world: every card, markets row, summary and fill equals the reference; OrdersMatched and contract legs count nothing', async () => {
    const node = await startNode();
    serveWorld(node, world);
    const config = inProcessConfig(
      'archive',
      archiveEnvironment(node, {
        ARCHIVE_START_BLOCK: String(world.firstBlock),
        ARCHIVE_END_BLOCK: String(world.lastBlock),
      }),
      archiveOverrides({ range: { initial: 16 } }),
    );
    await publishMetadata(config, world);
    expect(await runArchive(config, createLogger('error'))).toBe(0);
    const api = await apiFor(config);
    await expectProjectionsEqualReference(api, world);
    // The exchange split for a MINT match and never traded as a wallet.
    const exchange = bodyOf(await api.get(`traders/${CONTRACTS.exchangeV2}`)) as { card: { markets_total: number } };
    expect(exchange.card.markets_total).toBe(0);
    const exchangeV3 = bodyOf(await api.get(`traders/${POLYMARKET_PROTOCOL_V2.exchangeV3}`)) as {
      card: { markets_total: number };
    };
    expect(exchangeV3.card.markets_total).toBe(0);
    expect(world.markets.filter((market) => market.v2)).toHaveLength(4);
    // Restarting a finished archive reads nothing twice and changes nothing.
    const before = node.calls.filter((call) => call.method === 'eth_getLogs').length;
    expect(await runArchive(config, createLogger('error'))).toBe(0);
    expect(node.calls.filter((call) => call.method === 'eth_getLogs').length).toBe(before);
  });

  it("the card's coverage: V1 is counted once the archive has indexed from the V1 exchanges' deployment to the cut-over", async () => {
    // The CTF Exchange's deployment block (Polymarket's subgraph, networks.yaml): a fact, stated here.
    const v1Deployed = 33_605_403;
    const chain = generateWorld({ seed: 16, markets: 4, wallets: 4, matches: 30, firstBlock: v1Deployed - 5 });
    const cutBlock = chain.firstBlock + Math.floor((chain.lastBlock - chain.firstBlock) / 2);
    const cutOver = chain.timestampOf(cutBlock);
    const node = await startNode();
    serveWorld(node, chain);
    const halfway = inProcessConfig(
      'archive-coverage',
      archiveEnvironment(node, {
        ARCHIVE_START_BLOCK: String(chain.firstBlock),
        ARCHIVE_END_BLOCK: String(cutBlock - 1),
      }),
      archiveOverrides({ range: { initial: 16 } }),
    );
    // The card's cut-over inside the generated chain (the archive's eras stay as the harness sets them).
    const config: Config = { ...halfway, exchangeV2StartTs: cutOver };
    await publishMetadata(config, chain);
    // A V1-era fill of a wallet the chain does not trade: counted only once V1 is covered.
    const veteran = makeWallet('archive-coverage-v1');
    const market = chain.markets[0]!.conditionId;
    await withPublisher(config, createLogger('error'), async ({ publisher }) => {
      await publisher.publish('fillsArchive', [
        makeFill({
          wallet: veteran,
          condition_id: market,
          era: 'v1',
          price: 0.3,
          size_tokens: 20,
          usd: 6,
          ts: cutOver - 600,
        }),
      ]);
    });
    const cardOf = async (api: TestApi) =>
      bodyOf(await api.get(`traders/${veteran}`)) as {
        card: { markets_total: number; volume_usd: number; coverage: { eras: string[]; v2_start_ts: number } };
      };

    // Indexed from before the deployment, but not yet to the cut-over: V2 only.
    expect(await runArchive(config, createLogger('error'))).toBe(0);
    const before = await cardOf(await apiFor(config));
    expect(before.card.coverage).toEqual({ eras: ['v2'], v2_start_ts: cutOver });
    expect(before.card).toMatchObject({ markets_total: 0, volume_usd: 0 });

    // The same source resumed to the end of the chain, past the cut-over: V1 is in, without any flag.
    const whole: Config = { ...config, archive: { ...config.archive!, endBlock: chain.lastBlock } };
    expect(whole.card.includeV1).toBe(false);
    expect(await runArchive(whole, createLogger('error'))).toBe(0);
    const after = await cardOf(await apiFor(whole));
    expect(after.card.coverage).toEqual({ eras: ['v1', 'v2'], v2_start_ts: cutOver });
    expect(after.card).toMatchObject({ markets_total: 1, volume_usd: 6 });
  });

  it('a failing node (errors, 429, range refusals, timeouts, hang-ups, an outage) under a reorg of young blocks ends with exactly the reference', async () => {
    const node = await startNode();
    serveWorld(node, world);
    // Every block has a fork version while young (within 3 of the head): a ghost wallet's fill.
    const ghost = '0x00000000000000000000000000000000000000ff' as Hex;
    const market = world.markets[0]!;
    for (let block = world.firstBlock; block <= world.lastBlock; block++) {
      node.setFork(block, [
        {
          address: CONTRACTS.exchangeV2,
          ...v2OrderFilled({
            orderHash: pad('0x9'),
            maker: ghost,
            taker: CONTRACTS.exchangeV2,
            side: 0,
            tokenId: market.token1,
            making: 1_000_000n,
            taking: 2_000_000n,
            fee: 0n,
          }),
          blockNumber: toHex(block),
          transactionHash: pad(toHex(block * 1000 + 999), { size: 32 }),
          logIndex: '0x0',
          blockTimestamp: toHex(world.timestampOf(block)),
        },
      ]);
    }
    node.reorgDepth = 3;
    node.head = world.firstBlock + 40;
    node.headStep = 6;
    node.maxRange = 60;
    node.slowMs = 1_500;
    let outage = false;
    node.fault = (call, serial) => {
      if (serial === 3) return 'slow';
      if (serial % 11 === 0) return '429';
      if (serial % 13 === 0) return 'error';
      if (serial % 17 === 0) return 'hangup';
      if (call.method === 'eth_getLogs' && serial % 19 === 0) return 'range';
      return null;
    };
    const config = inProcessConfig(
      'archive-faults',
      archiveEnvironment(node, {
        ARCHIVE_START_BLOCK: String(world.firstBlock),
        ARCHIVE_END_BLOCK: String(world.lastBlock),
        ARCHIVE_CONFIRMATIONS: '4',
      }),
      archiveOverrides({ range: { initial: 64 }, timeoutMs: 500 }),
    );
    await publishMetadata(config, world);
    const run = runArchive(config, createLogger('error'));
    // Mid-backfill the node goes away for a while, then comes back on the same address.
    const midway = () => node.calls.filter((call) => call.method === 'eth_getLogs').length > 15;
    while (!midway()) await new Promise((resolve) => setTimeout(resolve, 10));
    await node.stop();
    outage = true;
    await new Promise((resolve) => setTimeout(resolve, 400));
    await node.restart();
    expect(await run).toBe(0);
    expect(outage).toBe(true);
    expect(node.servedFork.size).toBe(0);
    const api = await apiFor(config);
    await expectProjectionsEqualReference(api, world);
    const ghostCard = bodyOf(await api.get(`traders/${ghost}`)) as { card: { markets_total: number } };
    expect(ghostCard.card.markets_total).toBe(0);
  });

  it('recorded real logs: fills land as their authors asserted; a fill of a token no market claims is dead-lettered with its reason', async () => {
    const node = await startNode();
    const files = ['vike-trader', 'polyprinter'].flatMap((folder) =>
      readdirSync(path.join(ONCHAIN, folder)).map((file) => path.join(ONCHAIN, folder, file)),
    );
    const byBlock = new Map<number, RawLog[]>();
    for (const file of files) {
      const log = JSON.parse(readFileSync(file, 'utf8')) as RawLog;
      const block = Number(BigInt(log.blockNumber));
      byBlock.set(block, [
        ...(byBlock.get(block) ?? []),
        { ...log, logIndex: log.logIndex ?? toHex(900 + (byBlock.get(block)?.length ?? 0)) },
      ]);
    }
    // Two impossible V2 fills of the market's token by a wallet of their own, in the last block: a SELL of
    // 2^256 − 1 tokens and a SELL for nothing (takerAmountFilled 0). Dead-lettered, never a fill or a print.
    const forger = '0x00000000000000000000000000000000000000e1' as Hex;
    const polyprinterToken = 26668574760930728259231314028185687024922326310580986080795483281195870186846n;
    const lastBlock = Math.max(...byBlock.keys());
    const lastLogs = byBlock.get(lastBlock)!;
    const impossible = [
      [2n ** 256n - 1n, 1_000_000n],
      [5_000_000n, 0n],
    ].map(([making, taking], index) => ({
      address: CONTRACTS.exchangeV2,
      ...v2OrderFilled({
        orderHash: pad(toHex(index + 1)),
        maker: forger,
        taker: '0x00000000000000000000000000000000000000e2',
        side: 1,
        tokenId: polyprinterToken,
        making: making!,
        taking: taking!,
        fee: 0n,
      }),
      blockNumber: toHex(lastBlock),
      transactionHash: pad(toHex(0xe1e1 + index), { size: 32 }),
      logIndex: toHex(950 + index),
      ...(lastLogs[0]!.blockTimestamp ? { blockTimestamp: lastLogs[0]!.blockTimestamp } : {}),
      ...(lastLogs[0]!.blockHash ? { blockHash: lastLogs[0]!.blockHash } : {}),
    }));
    byBlock.set(lastBlock, [...lastLogs, ...impossible]);
    for (const [block, logs] of byBlock)
      node.setBlock(block, logs[0]!.blockTimestamp ? Number(BigInt(logs[0]!.blockTimestamp)) : 1_780_000_000, logs);
    const blocks = [...byBlock.keys()].sort((a, b) => a - b);
    const config = inProcessConfig(
      'archive-real',
      archiveEnvironment(node, {
        ARCHIVE_START_BLOCK: String(blocks[0]),
        ARCHIVE_END_BLOCK: String(blocks.at(-1)),
        ARCHIVE_RANGE_MAX: '20000000',
      }),
      archiveOverrides({ range: { initial: 5_000_000 }, unknownTokenWaitSeconds: 0 }),
    );
    // The upstream's token ids of the polyprinter market (Gamma clobTokenIds): the V2 fills' token is token 1.
    const polyprinterMarket = `0x${'ab'.repeat(32)}`;
    await withPublisher(config, createLogger('error'), async ({ publisher }) => {
      await publisher.publish('markets', [
        {
          type: 'metadata',
          condition_id: polyprinterMarket,
          title: 'A real market',
          outcome1: 'Yes',
          outcome2: 'No',
          title_start_ts: null,
          version: 1,
        },
        {
          type: 'tokens',
          condition_id: polyprinterMarket,
          token1_id: '26668574760930728259231314028185687024922326310580986080795483281195870186846',
          token2_id: '1',
        },
      ]);
    });
    expect(await runArchive(config, createLogger('error'))).toBe(0);
    const api = await apiFor(config);
    const maker = '0x335ac48637a3bc37c2eac9e0c9799c32b3cda494';
    const fills = bodyOf(await api.get(`traders/${maker}/fills?since=0`)) as {
      fills: Array<{ side: string; size_tokens: number; price: number; usd: number; condition_id: string; ts: number }>;
    };
    expect(fills.fills).toEqual([
      expect.objectContaining({
        side: 'BUY',
        size_tokens: 2.56,
        price: 0.92,
        usd: 2.3552,
        condition_id: polyprinterMarket,
        ts: 0x6a772e03,
      }),
    ]);
    const taker = bodyOf(await api.get(`traders/0x686024b5c1fcc10eb86b8d551fae78488b1b6279/fills?since=0`)) as {
      fills: Array<{ side: string; size_tokens: number }>;
    };
    expect(taker.fills).toEqual([expect.objectContaining({ side: 'SELL', size_tokens: 2.56 })]);
    // Legs of real wallets: the split, merge and redemptions.
    const split = bodyOf(await api.get('traders/0x20d2309cd92b797ae7ca175ed828ed8a27fbe29d/markets')) as {
      markets: Array<{ condition_id: string; pnl_usd: number }>;
    };
    expect(split.markets).toEqual([
      expect.objectContaining({
        condition_id: '0xb907d819a95244f9e19dc779e3db2a33133a864d22e9ce222d09a16b48759f49',
        pnl_usd: -20,
      }),
    ]);
    const redeemed = bodyOf(await api.get('traders/0x41792a63ad17e7a210c808de4177e64a561eccee/markets')) as {
      markets: Array<{ pnl_usd: number }>;
    };
    expect(redeemed.markets).toEqual([expect.objectContaining({ pnl_usd: 11 })]);
    // The V1 fill and the other V2 fills name tokens no market claims here: dead-lettered, with the reason.
    const store = await openStore(config.clickhouse);
    const letters = await store.query<{ reason: string; original_base64: string }>(
      "SELECT reason, original_base64 FROM {db:Identifier}.dead_letters WHERE topic = 'archive' ORDER BY offset",
      {},
    );
    await store.close();
    const unknown = letters.filter((letter) => letter.reason.startsWith('unknown token'));
    expect(unknown.length).toBe(3);
    for (const letter of unknown) expect(letter.reason).toMatch(/^unknown token \d+: no market claims it/);
    expect(
      letters.filter((letter) => !letter.reason.startsWith('unknown token')).map((letter) => letter.reason),
    ).toEqual([
      expect.stringMatching(/^exchangeV2\.OrderFilled: tokens amount \d+ exceeds what the collateral can represent/),
      'exchangeV2.OrderFilled: fill of zero USD (a price of 0)',
    ]);
    const forged = bodyOf(await api.get(`traders/${forger}/fills?since=0`)) as { fills: unknown[] };
    expect(forged.fills).toEqual([]);
    const deadTokens = letters
      .map((letter) => JSON.parse(Buffer.from(letter.original_base64, 'base64').toString('utf8')) as RawLog)
      .map((log) => log.transactionHash);
    expect(deadTokens).toContain('0x31d5dca405136cb4ed09bcf817d2b6c2ce1331b18d4b5738eae2e76f7e73e391');
  });
});

beforeAll(() => {
  expect(API).toBe('/api/agent/v1');
});

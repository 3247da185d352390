/**
 * Polymarket Protocol V2 markets and intermediaries' legs, end to end: a local node serves logs → archive →
 * in-process log → ingest → REST. No real log of Protocol V2's contracts exists anywhere public, so every V2
 * log here is ENCODED WITH VIEM FROM POLYMARKET'S OWN ABIs (../shared/data/polymarket/onchain/protocol-v2/*.json,
 * transcribed from their sources): the test's names say so. The collateral adapter's conversion is the
 * recorded real log; the transfer naming its user is encoded (the recording holds no transfer of that
 * transaction). Every expected figure is worked by hand below, from the amounts the logs state.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { encodeAbiParameters, encodeEventTopics, pad, toHex, type Abi, type Hex } from 'viem';
import type { Config } from '../config.ts';
import { createLogger } from '../log.ts';
import { runArchive } from '../roles/archive.ts';
import { withPublisher } from '../roles/runtime.ts';
import type { RawLog } from '../ingest/sources/archive/decode.ts';
import { negRiskConditionId } from '../ingest/sources/archive/positions.ts';
import { POLYMARKET_CONTRACTS, POLYMARKET_PROTOCOL_V2 } from '../chain.ts';
import { bodyOf, gatesNeverBind, inProcessConfig, publishPlanKeys, startTestApi, type TestApi } from './harness/api.ts';
import { archiveEnvironment, archiveOverrides } from './harness/archive.ts';
import { v2OrderFilled } from './harness/chain-world.ts';
import { LocalPolygonNode } from './harness/polygon-node.ts';
import { makeMarket, makeWallet } from './factories.ts';

const V2_DIR = path.resolve(import.meta.dirname, '../../shared/data/polymarket/onchain/protocol-v2');
const ONCHAIN = path.resolve(import.meta.dirname, '../../shared/data/polymarket/onchain');
const abiOf = (name: string) =>
  (JSON.parse(readFileSync(path.join(V2_DIR, `${name}.json`), 'utf8')) as { abi: Abi }).abi;
const MODULE_ABI = abiOf('NegRiskModule');
const ROUTER_ABI = abiOf('Router');
const CTF_TRANSFER_BATCH = [
  {
    type: 'event',
    name: 'TransferBatch',
    inputs: [
      { name: 'operator', type: 'address', indexed: true },
      { name: 'from', type: 'address', indexed: true },
      { name: 'to', type: 'address', indexed: true },
      { name: 'ids', type: 'uint256[]', indexed: false },
      { name: 'values', type: 'uint256[]', indexed: false },
    ],
  },
] as const satisfies Abi;
const NOW = Math.floor(Date.now() / 1000);
const V2 = POLYMARKET_PROTOCOL_V2;
const USD = 1_000_000n;

/** A V2 id from its parts (positions-v2.ts layout): moduleId | baseHash | arity | reserved | chain | index | outcome. */
function v2Id(moduleId: number, baseHash: bigint, arity: number, conditionIndex: number, outcome: number): bigint {
  return (
    (BigInt(moduleId) << 248n) |
    (baseHash << 120n) |
    (BigInt(arity) << 104n) |
    (BigInt(conditionIndex) << 8n) |
    BigInt(outcome)
  );
}
const word = (id: bigint) => `0x${id.toString(16).padStart(64, '0')}` as Hex;
/** A `bytes31` (condition) or `bytes29` (event) argument: the id's leading bytes. */
const bytesN = (id: bigint, n: number) => word(id).slice(0, 2 + n * 2) as Hex;

type EventInputs = Array<{ name: string; type: string; indexed?: boolean }>;
/** A log of `eventName` of an ABI, encoded by viem: indexed arguments as topics, the others as data. */
function encoded(abi: Abi, address: Hex, eventName: string, args: Record<string, unknown>) {
  const event = abi.find((item) => item.type === 'event' && item.name === eventName) as unknown as {
    inputs: EventInputs;
  };
  const data = event.inputs.filter((input) => !input.indexed);
  return {
    address,
    topics: encodeEventTopics({ abi, eventName, args } as never) as Hex[],
    data: encodeAbiParameters(data as never, data.map((input) => args[input.name]) as never),
  };
}
const moduleLog = (address: Hex, eventName: string, args: Record<string, unknown>) =>
  encoded(MODULE_ABI, address, eventName, args);
const routerLog = (eventName: string, args: Record<string, unknown>) => encoded(ROUTER_ABI, V2.router, eventName, args);

describe('Protocol V2 markets and intermediaries (logs encoded with viem from the real ABIs)', () => {
  const node = new LocalPolygonNode();
  let api: TestApi | undefined;
  afterAll(async () => {
    await api?.store.command('DROP DATABASE IF EXISTS {db:Identifier}');
    await api?.close();
    await node.stop();
  });

  it('encoded V2 logs: fills by position id, module legs, Router and adapter principals, resolutions, a migration; REST equals hand-worked figures', async () => {
    await node.start();
    const [alice, bob, carol, dave, taker] = ['v2-alice', 'v2-bob', 'v2-carol', 'v2-dave', 'v2-taker'].map(
      (label) => makeWallet(label) as Hex,
    ) as [Hex, Hex, Hex, Hex, Hex];
    // Binary market M (BinaryModule, module 1); neg-risk event E (module 2) of three conditions; a migrated market L.
    const binary = v2Id(1, 0xb1n, 0, 0, 0);
    const binaryCondition = word(binary);
    const event = v2Id(2, 0xe1n, 3, 0, 0);
    const eventConditions = [0, 1, 2].map((index) => word(v2Id(2, 0xe1n, 3, index, 0)));
    const migrated = v2Id(1, 0x1e9n, 0, 0, 0);
    const legacyCondition = `0x${'1e'.repeat(32)}` as Hex;

    // The recorded conversion (real, block 87,004,000): the pUSD NegRisk collateral adapter converts NO of
    // question 10 of a 12-question market for a user it does not name.
    const recorded = JSON.parse(
      readFileSync(path.join(ONCHAIN, 'vike-trader/negrisk_adapter_positions_converted.json'), 'utf8'),
    ) as RawLog;
    const conversionBlock = Number(BigInt(recorded.blockNumber));
    const marketId = recorded.topics[2] as Hex;
    const questions = Array.from({ length: 12 }, (_, index) =>
      negRiskConditionId(POLYMARKET_CONTRACTS.negRiskAdapter, marketId, index),
    );
    const tsOf = (block: number) => Number(BigInt(recorded.blockTimestamp!)) + (block - conversionBlock) * 2;

    let serial = 0;
    const blocks = new Map<number, RawLog[]>();
    const tx = (block: number, logs: Array<{ address: Hex; topics: Hex[]; data: Hex }>) => {
      const txHash = pad(toHex(0x7000 + ++serial), { size: 32 });
      const list = blocks.get(block) ?? [];
      for (const log of logs)
        list.push({
          ...log,
          blockNumber: toHex(block),
          transactionHash: txHash,
          logIndex: toHex(list.length),
          blockTimestamp: toHex(tsOf(block)),
          removed: false,
        });
      blocks.set(block, list);
    };
    const fill = (maker: Hex, other: Hex, side: 0 | 1, tokenId: bigint, tokens: bigint, usd: bigint) => [
      {
        address: V2.exchangeV3 as Hex,
        ...v2OrderFilled({
          orderHash: pad(toHex(++serial), { size: 32 }),
          maker,
          taker: other,
          side,
          tokenId,
          making: side === 0 ? usd : tokens,
          taking: side === 0 ? tokens : usd,
          fee: 0n,
        }),
      },
      {
        address: V2.exchangeV3 as Hex,
        ...v2OrderFilled({
          orderHash: pad(toHex(++serial), { size: 32 }),
          maker: other,
          taker: V2.exchangeV3 as Hex,
          side: side === 0 ? 1 : 0,
          tokenId,
          making: side === 0 ? tokens : usd,
          taking: side === 0 ? usd : tokens,
          fee: 0n,
        }),
      },
    ];
    const base = conversionBlock - 20;
    // alice: buys 100 YES of M at 0.40 on ExchangeV3; the same position id from CTF Exchange V2 is no CTF token.
    tx(base, fill(alice, taker, 0, binary, 100n * USD, 40n * USD));
    // alice splits 50 herself (BinaryModule), merges 20 through the Router (the module pays the Router).
    tx(base + 1, [
      moduleLog(V2.binaryModule, 'PositionsSplit', {
        initiator: alice,
        conditionId: bytesN(binary, 31),
        recipient0: alice,
        recipient1: alice,
        amount: 50n * USD,
      }),
    ]);
    tx(base + 2, [
      routerLog('RouterPositionsMerged', { initiator: alice, conditionId: bytesN(binary, 31), amount: 20n * USD }),
      moduleLog(V2.binaryModule, 'PositionsMerged', {
        initiator: V2.router,
        conditionId: bytesN(binary, 31),
        recipient: V2.router,
        amount: 20n * USD,
      }),
    ]);
    // A match's own mint (initiated by the exchange) is the fills' already.
    tx(base + 2, [
      moduleLog(V2.binaryModule, 'PositionsSplit', {
        initiator: V2.exchangeV3,
        conditionId: bytesN(binary, 31),
        recipient0: alice,
        recipient1: taker,
        amount: 7n * USD,
      }),
    ]);
    // M resolves YES (result vector), alice redeems 130 YES for 130 and 30 NO for nothing.
    tx(base + 3, [
      moduleLog(V2.binaryModule, 'ConditionResolved', { conditionId: bytesN(binary, 31), result: [USD, 0n] }),
    ]);
    tx(base + 4, [
      moduleLog(V2.binaryModule, 'PositionRedeemed', {
        initiator: alice,
        positionId: binary,
        recipient: alice,
        amount: 130n * USD,
        payout: 130n * USD,
      }),
      moduleLog(V2.binaryModule, 'PositionRedeemed', {
        initiator: alice,
        positionId: binary | 1n,
        recipient: alice,
        amount: 30n * USD,
        payout: 0n,
      }),
    ]);
    // bob: buys 10 NO of E's condition 0 at 0.70, converts them into YES of conditions 1 and 2; condition 1
    // resolves YES, the rest are derived NO (the derivation must not overturn condition 1).
    tx(base + 5, fill(bob, taker, 0, BigInt(eventConditions[0]!) | 1n, 10n * USD, 7n * USD));
    tx(base + 6, [
      moduleLog(V2.negRiskModule, 'PositionConverted', {
        initiator: bob,
        eventId: bytesN(event, 29),
        recipient: bob,
        conditionIndex: 0n,
        amount: 10n * USD,
      }),
    ]);
    tx(base + 7, [
      moduleLog(V2.negRiskModule, 'ConditionResolved', {
        conditionId: bytesN(BigInt(eventConditions[1]!), 31),
        result: [USD, 0n],
      }),
    ]);
    tx(base + 8, [moduleLog(V2.negRiskModule, 'RemainingConditionsDerivableAsNo', { eventId: bytesN(event, 29) })]);
    // dave: a migrated market keeps its legacy id; he buys 5 YES at 0.20 of its V2 position.
    tx(base + 9, [
      moduleLog(V2.binaryModule, 'MigrationConditionRegistered', {
        v2ConditionId: bytesN(migrated, 31),
        legacyConditionId: legacyCondition,
      }),
    ]);
    tx(base + 10, fill(dave, taker, 0, migrated, 5n * USD, 1n * USD));
    // carol: the recorded real conversion, and (encoded) the adapter pulling her NO of question 10 in the
    // same transaction, which names her.
    const adapter = recorded.topics[1]!.replace(/^0x0{24}/, '0x') as Hex;
    const transfer = {
      address: POLYMARKET_CONTRACTS.conditionalTokens as Hex,
      topics: encodeEventTopics({
        abi: CTF_TRANSFER_BATCH,
        eventName: 'TransferBatch',
        args: { operator: adapter, from: carol, to: adapter },
      }) as Hex[],
      data: encodeAbiParameters([{ type: 'uint256[]' }, { type: 'uint256[]' }], [[1234n], [10n * USD]]),
    };
    blocks.set(conversionBlock, [
      {
        ...transfer,
        blockNumber: recorded.blockNumber,
        transactionHash: recorded.transactionHash,
        logIndex: '0x300',
        blockTimestamp: recorded.blockTimestamp,
      },
      recorded,
    ]);
    const last = conversionBlock;
    for (let block = base; block <= last; block++) node.setBlock(block, tsOf(block), blocks.get(block) ?? []);

    const config: Config = inProcessConfig(
      'protocol-v2',
      archiveEnvironment(node, { ARCHIVE_START_BLOCK: String(base), ARCHIVE_END_BLOCK: String(last) }),
      archiveOverrides({ range: { initial: 4 }, unknownTokenWaitSeconds: 0 }),
    );
    // Titles (the upstream's), and the recorded market's twelve questions as Gamma would name them.
    await withPublisher(config, createLogger('error'), async ({ publisher }) => {
      const named = [binaryCondition, ...eventConditions, legacyCondition, ...questions];
      await publisher.publish(
        'markets',
        named.map((condition_id, index) =>
          makeMarket({ condition_id, title: `Market ${index}`, outcome1: 'Yes', outcome2: 'No' }),
        ),
      );
      await publisher.publish(
        'markets',
        questions.map((condition_id, index) => ({
          type: 'tokens' as const,
          condition_id,
          token1_id: String(9_000_000 + index * 2),
          token2_id: String(9_000_001 + index * 2),
          neg_risk: true,
        })),
      );
    });
    expect(await runArchive(config, createLogger('error'))).toBe(0);
    const keys = await publishPlanKeys(config, NOW - 86_400);
    api = await startTestApi(config, { now: () => NOW, keys, gatesClockMs: gatesNeverBind() });
    // REST bodies (any: each is read field by field and checked below)
    const get = async (route: string) => bodyOf(await api!.get(route)) as any;
    type Row = { condition_id: string; pnl_usd: number; resolved: boolean; winner: string | null; fills_count: number };
    const rowsOf = async (wallet: string) =>
      new Map(
        ((await get(`traders/${wallet}/markets?limit=100`)).markets as Row[]).map((row) => [row.condition_id, row]),
      );

    // alice in M: YES 100 bought + 50 split − 20 merged = 130, NO 50 − 20 = 30; cash −40 − 50 + 20 + 130 + 0.
    const aliceRows = await rowsOf(alice);
    expect([...aliceRows.keys()]).toEqual([binaryCondition]);
    expect(aliceRows.get(binaryCondition)).toMatchObject({ resolved: true, winner: 'Yes', fills_count: 1 });
    expect(aliceRows.get(binaryCondition)!.pnl_usd).toBeCloseTo(-40 - 50 + 20 + 130, 6);
    const aliceSummary = (await get(`traders/${alice}/markets/${binaryCondition}/summary`)).summary as {
      pnl_usd: number;
      buy_usd: number;
    };
    expect(aliceSummary.pnl_usd).toBeCloseTo(60, 6);
    expect(aliceSummary.buy_usd).toBeCloseTo(40, 6);
    const aliceCard = (await get(`traders/${alice}`)).card as { markets_total: number; volume_usd: number };
    expect(aliceCard).toMatchObject({ markets_total: 1 });
    expect(aliceCard.volume_usd).toBeCloseTo(40, 6);

    // bob: condition 0: −7 (NO bought, converted away); condition 1: 10 YES that won; condition 2: 10 YES that lost.
    const bobRows = await rowsOf(bob);
    expect(new Set(bobRows.keys())).toEqual(new Set(eventConditions));
    expect(bobRows.get(eventConditions[0]!)!.pnl_usd).toBeCloseTo(-7, 6);
    expect(bobRows.get(eventConditions[1]!)).toMatchObject({ resolved: true, winner: 'Yes' });
    expect(bobRows.get(eventConditions[1]!)!.pnl_usd).toBeCloseTo(10, 6);
    expect(bobRows.get(eventConditions[2]!)).toMatchObject({ resolved: true, winner: 'No' });
    expect(bobRows.get(eventConditions[2]!)!.pnl_usd).toBeCloseTo(0, 6);
    // The card: three resolved markets, one won (+10) of three: −7 + 10 + 0.
    const bobCard = (await get(`traders/${bob}`)).card as {
      markets_total: number;
      resolved_total: number;
      winrate: number;
      career_pnl_usd: number;
    };
    expect(bobCard).toMatchObject({ markets_total: 3, resolved_total: 3 });
    expect(bobCard.winrate).toBeCloseTo(1 / 3, 6);
    expect(bobCard.career_pnl_usd).toBeCloseTo(3, 6);
    const bobTop = (await get(`traders/${bob}/top-markets`)) as { top_wins: Row[]; top_losses: Row[] };
    expect(bobTop.top_wins.map((row) => row.condition_id)).toEqual([eventConditions[1]]);
    expect(bobTop.top_losses.map((row) => row.condition_id)).toEqual([eventConditions[0]]);

    // dave: the migrated market under its legacy id.
    expect([...(await rowsOf(dave)).keys()]).toEqual([legacyCondition]);

    // carol: NO of question 10 out, YES of the eleven others in, no USDC (one question converted).
    const carolRows = await rowsOf(carol);
    expect(new Set(carolRows.keys())).toEqual(new Set(questions));
    for (const row of carolRows.values()) expect(row.pnl_usd).toBeCloseTo(0, 6);
    expect((await get(`traders/${carol}`)).card).toMatchObject({ markets_total: 12, resolved_total: 0 });
    type Sides = { sides: Array<{ net_tokens: number }> };
    const carolYes = (await get(`traders/${carol}/markets/${questions[3]}/summary`)).summary as Sides;
    expect(carolYes.sides.map((side) => side.net_tokens)).toEqual([10, 0]);
    const carolNo = (await get(`traders/${carol}/markets/${questions[10]}/summary`)).summary as Sides;
    expect(carolNo.sides.map((side) => side.net_tokens)).toEqual([0, -10]);
    // The adapter itself is never a trader.
    const adapterCard = (await get(`traders/${adapter}`)).card as { markets_total: number };
    expect(adapterCard.markets_total).toBe(0);
  });
});

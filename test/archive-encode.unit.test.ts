/**
 * The archive publishes its own events without a second schema pass (ingest/sources/archive/encode.ts). This
 * holds that shortcut to the contract: every event the archive builds from a generated chain, from the
 * recorded real logs and from a neg-risk conversion passes the topic's schema (encodeEvent throws otherwise),
 * and the archive's message has the same key and the same JSON content as the schema's normalized encoding.
 */
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { encodeAbiParameters, encodeEventTopics, encodePacked, keccak256, pad, toHex, type Hex } from 'viem';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../config.ts';
import type { EventInputOf, TopicId } from '../ingest/contract/topics.ts';
import { encodeEvent } from '../ingest/publisher.ts';
import { negRiskAdapterAbi } from '../ingest/sources/archive/abi.ts';
import { contractsOf } from '../ingest/sources/archive/contracts.ts';
import { decodeLog, type RawLog } from '../ingest/sources/archive/decode.ts';
import { encodeArchiveEvent } from '../ingest/sources/archive/encode.ts';
import { factsOf } from '../ingest/sources/archive/facts.ts';
import { TokenDirectory } from '../ingest/sources/archive/tokens.ts';
import { generateWorld } from './harness/chain-world.ts';

const ONCHAIN = path.resolve(import.meta.dirname, '../../shared/data/polymarket/onchain');
const config = parseConfig({ POLYGON_RPC_URL: 'http://127.0.0.1:1' }, { archive: { v2StartTs: 0 } }).archive!;
const contracts = contractsOf(config);

type Published = { [T in TopicId]?: EventInputOf<T>[] };

function eventsOf(logs: readonly RawLog[], directory: TokenDirectory): Published {
  const published: Required<Pick<Published, 'markets' | 'fillsArchive' | 'trades' | 'positions'>> = {
    markets: [],
    fillsArchive: [],
    trades: [],
    positions: [],
  };
  for (const raw of logs) {
    const log = decodeLog(raw);
    if (!log) continue;
    const outcome = factsOf(log, log.blockTimestamp ?? 1_780_000_000, directory, contracts);
    if (outcome.kind !== 'events') continue;
    published.markets.push(...outcome.markets);
    published.fillsArchive.push(...outcome.fills);
    published.trades.push(...outcome.trades);
    published.positions.push(...outcome.legs);
  }
  return published;
}

function expectSameAsSchema(published: Published): number {
  let count = 0;
  for (const [topicId, events] of Object.entries(published) as Array<[TopicId, EventInputOf<TopicId>[]]>) {
    for (const event of events) {
      const ours = encodeArchiveEvent(topicId, event);
      const schema = encodeEvent(topicId, event);
      expect(ours.key, topicId).toBe(schema.key);
      expect(JSON.parse(ours.value as string), topicId).toEqual(JSON.parse(schema.value as string));
      count++;
    }
  }
  return count;
}

describe('the archive’s events, encoded once, equal the schema’s encoding', () => {
  it('a generated chain: tokens, fills, prints, splits, resolutions (winner and 50/50), redemptions', () => {
    const world = generateWorld({ seed: 31, markets: 6, wallets: 8, matches: 80 });
    const logs = [...world.blocks.values()].flat();
    const published = eventsOf(logs, new TokenDirectory());
    expect(published.fillsArchive!.length).toBe(world.fills.length);
    expect(published.positions!.length).toBe(world.legs.length);
    expect(expectSameAsSchema(published)).toBeGreaterThan(world.fills.length);
  });

  it('the recorded real logs, with their markets known', () => {
    const logs = ['vike-trader', 'polyprinter'].flatMap((folder) =>
      readdirSync(path.join(ONCHAIN, folder)).map(
        (file) => JSON.parse(readFileSync(path.join(ONCHAIN, folder, file), 'utf8')) as RawLog,
      ),
    );
    const directory = new TokenDirectory();
    for (const raw of logs) {
      const log = decodeLog(raw);
      if (log?.kind === 'orderFilled')
        directory.add(`0x${'ab'.repeat(32)}`, log.tokenId.toString(), `${log.tokenId + 1n}`, false);
    }
    const published = eventsOf(logs, directory);
    expect(published.fillsArchive!.length).toBeGreaterThanOrEqual(5);
    expect(published.fillsArchive!.some((fill) => (fill.fee_usd ?? 0) > 0)).toBe(true);
    expect(expectSameAsSchema(published)).toBeGreaterThan(5);
  });

  it('a neg-risk conversion’s legs', () => {
    const marketId = `0x${'5e'.repeat(31)}00` as Hex;
    const directory = new TokenDirectory();
    for (let index = 0; index < 4; index++) {
      const condition = keccak256(
        encodePacked(
          ['address', 'bytes32', 'uint256'],
          [config.contracts.negRiskAdapter, `${marketId.slice(0, 64)}0${index}` as Hex, 2n],
        ),
      );
      directory.add(condition, `${100 + index * 2}`, `${101 + index * 2}`, true);
    }
    const raw: RawLog = {
      address: config.contracts.negRiskAdapter,
      topics: encodeEventTopics({
        abi: negRiskAdapterAbi,
        eventName: 'PositionsConverted',
        args: { stakeholder: `0x${'cd'.repeat(20)}`, marketId, indexSet: 0b0110n },
      }) as Hex[],
      data: encodeAbiParameters([{ type: 'uint256' }], [2_500_000n]),
      blockNumber: toHex(90_000_000),
      transactionHash: pad('0x99', { size: 32 }),
      logIndex: '0x1',
      blockTimestamp: toHex(1_780_000_000),
    };
    const published = eventsOf([raw], directory);
    expect(published.positions!.map((leg) => leg.kind).sort()).toEqual([
      'CONVERT_IN',
      'CONVERT_IN',
      'CONVERT_OUT',
      'CONVERT_OUT',
    ]);
    expect(expectSameAsSchema(published)).toBe(4);
  });
});

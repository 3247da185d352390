/**
 * Protocol V2 in the decoder and the facts, without a node. No real log of these contracts exists: the logs
 * here are ENCODED WITH VIEM, and the topics our ABI yields are checked against the topic0s computed from
 * Polymarket's own sources (../shared/data/polymarket/onchain/protocol-v2/topics.json).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import fc from 'fast-check';
import { encodeAbiParameters, encodeEventTopics, pad, toEventSignature, toHex, type Hex } from 'viem';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../config.ts';
import {
  normalizedConditionId,
  paddedV2Id,
  v2EventConditions,
  v2Position,
  v2PositionId,
} from '../../contract/positions-v2.ts';
import { v2ModuleAbi, v2RouterAbi, EVENTS_BY_TOPIC0 } from './abi.ts';
import { contractsOf } from './contracts.ts';
import { decodeLog, LogDecodeError, type DecodedLog } from './decode.ts';
import { factsOf } from './facts.ts';
import { TokenDirectory } from './tokens.ts';

const TOPICS = JSON.parse(
  readFileSync(
    path.resolve(import.meta.dirname, '../../../../shared/data/polymarket/onchain/protocol-v2/topics.json'),
    'utf8',
  ),
) as Array<{ contract: string; signature: string; topic0: string; indexed: number }>;
const config = parseConfig({ POLYGON_RPC_URL: 'http://127.0.0.1:1' }).archive!;
const contracts = contractsOf(config);
const WALLET: Hex = `0x${'aa'.repeat(20)}`;

/** moduleId | baseHash | arity | reserved | chain | conditionIndex | outcome, as the README lays them out. */
function idOf(parts: {
  module: number;
  base: bigint;
  arity?: number;
  reserved?: bigint;
  index?: number;
  outcome?: number;
}) {
  return (
    (BigInt(parts.module) << 248n) |
    (parts.base << 120n) |
    (BigInt(parts.arity ?? 0) << 104n) |
    ((parts.reserved ?? 0n) << 40n) |
    (BigInt(parts.index ?? 0) << 8n) |
    BigInt(parts.outcome ?? 0)
  );
}

describe('Protocol V2 (logs encoded with viem from the real ABIs)', () => {
  it("every event the archive reads has the topic0 of Polymarket's source", () => {
    const bySignature = new Map(TOPICS.map((entry) => [entry.signature, entry]));
    for (const event of [...v2ModuleAbi, ...v2RouterAbi]) {
      const signature = toEventSignature(event)
        .replace(/^event /, '')
        .replace(/ indexed| \w+(?=[,)])/g, '');
      const want = bySignature.get(signature);
      expect(want, signature).toBeDefined();
      expect(EVENTS_BY_TOPIC0.get(want!.topic0)?.event.name).toBe(event.name);
      expect(event.inputs.filter((input) => 'indexed' in input && input.indexed).length).toBe(want!.indexed);
    }
  });

  it('a position id: condition, side and event from its bits; not a V2 position when reserved bits are set or the module is unknown', () => {
    const yes = idOf({ module: 2, base: 0xabcn, arity: 4, index: 3 });
    expect(v2Position(yes)).toEqual({
      moduleId: 2,
      conditionId: `0x${yes.toString(16).padStart(64, '0')}`,
      outcomeIndex: 0,
      tokenSide: 1,
      arity: 4,
      conditionIndex: 3,
      eventId: `0x${idOf({ module: 2, base: 0xabcn, arity: 4 }).toString(16).padStart(64, '0')}`,
    });
    expect(v2Position(yes | 1n)).toMatchObject({ tokenSide: 2, conditionId: v2Position(yes)!.conditionId });
    expect(v2Position(idOf({ module: 1, base: 1n, reserved: 1n }))).toBeNull();
    expect(v2Position(idOf({ module: 4, base: 1n }))).toBeNull();
    expect(v2Position(idOf({ module: 1, base: 1n, outcome: 2 }))).toBeNull();
    // A real CTF token id (keccak-derived) is no V2 position.
    expect(v2Position('21742633143463906290569050155826241533067272736897614950488156847949938836455')).toBeNull();
    expect(v2EventConditions(paddedV2Id(`0x${'00'.repeat(29)}`), false)).toEqual([]);
    expect(normalizedConditionId(`0x${'ab'.repeat(31)}`)).toBe(`0x${'ab'.repeat(31)}00`);
    expect(normalizedConditionId(`0x${'ab'.repeat(32)}`)).toBe(`0x${'ab'.repeat(32)}`);
  });

  it('property: a V2 position id round-trips through its condition id and outcome', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 3 }),
        fc.bigInt({ min: 0n, max: (1n << 128n) - 1n }),
        // Arities of real neg-risk events are tens: the event's conditions are listed, so keep them small.
        fc.integer({ min: 0, max: 64 }),
        fc.integer({ min: 0, max: 80 }),
        fc.integer({ min: 0, max: 1 }),
        (module, base, arity, index, outcome) => {
          const id = idOf({ module, base, arity, index, outcome });
          const position = v2Position(id)!;
          expect(v2PositionId(position.conditionId, outcome as 0 | 1)).toBe(id);
          expect(v2EventConditions(position.eventId, false)[index]).toBe(
            index < arity ? position.conditionId : undefined,
          );
        },
      ),
    );
  });

  it('the same OrderFilled topic: ExchangeV3 names a position id (market from its bits), CTF Exchange V2 a CTF token (unknown here: waits)', () => {
    const positionId = idOf({ module: 1, base: 0x5en });
    const fill: DecodedLog = {
      address: config.contracts.ctfExchangeV2,
      txHash: `0x${'11'.repeat(32)}`,
      logIndex: 1,
      blockNumber: 1,
      blockTimestamp: 1,
      kind: 'orderFilled',
      era: 'v2',
      orderHash: `0x${'00'.repeat(32)}`,
      maker: WALLET,
      taker: `0x${'bb'.repeat(20)}`,
      tokenId: positionId | 1n,
      side: 'BUY',
      tokens: 10,
      usd: 4,
      price: 0.4,
      fee: 0,
      feeUnit: 'usd',
      feeUsd: 0,
    };
    expect(factsOf(fill, 1, new TokenDirectory(), contracts)).toEqual({
      kind: 'pending',
      waitingFor: `token ${positionId | 1n}`,
    });
    const v3 = factsOf({ ...fill, address: config.protocolV2.exchangeV3 }, 1, new TokenDirectory(), contracts);
    expect(v3).toMatchObject({
      kind: 'events',
      fills: [{ wallet: WALLET, condition_id: `0x${positionId.toString(16).padStart(64, '0')}`, token_side: 2 }],
    });
    // An ExchangeV3 fill of an id that is no V2 position is left out, never booked to a made-up market.
    expect(
      factsOf({ ...fill, address: config.protocolV2.exchangeV3, tokenId: 12345n }, 1, new TokenDirectory(), contracts),
    ).toEqual({
      kind: 'skipped',
      reason: 'not_a_v2_position',
    });
  });

  it('a redemption paying no binary payout per token (0.3) is dead-lettered with the reason', () => {
    const log = {
      address: config.protocolV2.binaryModule,
      topics: encodeEventTopics({
        abi: v2ModuleAbi,
        eventName: 'PositionRedeemed',
        args: { initiator: WALLET, positionId: idOf({ module: 1, base: 7n }), recipient: WALLET },
      }) as Hex[],
      data: encodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }], [10_000_000n, 3_000_000n]),
      blockNumber: toHex(5),
      transactionHash: pad('0x99', { size: 32 }),
      logIndex: '0x0',
    };
    expect(() => decodeLog(log)).toThrow(LogDecodeError);
    expect(() => decodeLog(log)).toThrow(/no binary payout/);
    const paid = decodeLog({
      ...log,
      data: encodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }], [10_000_000n, 10_000_000n]),
    });
    expect(paid).toMatchObject({ kind: 'v2Action', action: 'redeem', tokens: 10, usd: 10, recipient: WALLET });
  });
});

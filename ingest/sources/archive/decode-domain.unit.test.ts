/**
 * Hostile fills: an `OrderFilled` whose amounts no exchange could emit (a uint256 beyond the collateral, a
 * side of nothing, more USD than tokens) is a decode error with its reason (the archive dead-letters it),
 * never a fill at an impossible price. Whatever the amounts, what decodes is a fill the contract accepts.
 */
import { v2OrderFilled } from '../../../test/harness/chain-world.ts';
import fc from 'fast-check';
import { encodeAbiParameters, encodeEventTopics, pad, toHex, type Hex } from 'viem';
import { describe, expect, it } from 'vitest';
import { fillSchema } from '../../contract/events.ts';
import { exchangeV1Abi } from './abi.ts';
import { decodeBatch, type RawLog } from './decode.ts';

const EXCHANGE_V2: Hex = '0xe111180000d2663c0091e4f400237545b87b996b';
const EXCHANGE_V1: Hex = '0x4bfb41d5b3570defd03c39a9a4d8de6bd8b8982e';
const MAX_UINT256 = 2n ** 256n - 1n;

function v2Fill(side: 0 | 1, making: bigint, taking: bigint, fee = 0n): RawLog {
  const { topics, data } = v2OrderFilled({
    orderHash: pad('0x01'),
    maker: '0x00000000000000000000000000000000000000aa',
    taker: EXCHANGE_V2,
    side,
    tokenId: 42n,
    making,
    taking,
    fee,
  });
  return {
    address: EXCHANGE_V2,
    topics: topics as Hex[],
    data,
    blockNumber: toHex(1),
    transactionHash: pad('0x02'),
    logIndex: '0x0',
  };
}

function v1Fill(makerAssetId: bigint, takerAssetId: bigint, making: bigint, taking: bigint): RawLog {
  const topics = encodeEventTopics({
    abi: exchangeV1Abi,
    eventName: 'OrderFilled',
    args: {
      orderHash: pad('0x01'),
      maker: '0x00000000000000000000000000000000000000aa',
      taker: '0x00000000000000000000000000000000000000bb',
    },
  });
  const data = encodeAbiParameters(
    [{ type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }, { type: 'uint256' }],
    [makerAssetId, takerAssetId, making, taking, 0n],
  );
  return {
    address: EXCHANGE_V1,
    topics: topics as Hex[],
    data,
    blockNumber: toHex(1),
    transactionHash: pad('0x02'),
    logIndex: '0x0',
  };
}

function decodeOne(log: RawLog) {
  return decodeBatch([log])[0];
}

describe('fills outside the exchange’s domain are decode errors with a reason', () => {
  it('a V2 SELL of 2^256 − 1 tokens is refused, not a fill of 1e71 tokens at 1e-71', () => {
    expect(decodeOne(v2Fill(1, MAX_UINT256, 1_000_000n))).toEqual({
      kind: 'decodeError',
      reason: expect.stringMatching(/exchangeV2\.OrderFilled: tokens amount \d+ exceeds what the collateral/),
    });
  });

  it('a V2 SELL for nothing (takerAmountFilled 0) is refused, not a fill at price 0', () => {
    expect(decodeOne(v2Fill(1, 5_000_000n, 0n))).toEqual({
      kind: 'decodeError',
      reason: 'exchangeV2.OrderFilled: fill of zero USD (a price of 0)',
    });
  });

  it('a V2 BUY of nothing, a price above 1, and a V1 fill of nothing are refused', () => {
    expect(decodeOne(v2Fill(0, 5_000_000n, 0n))).toMatchObject({ reason: /fill of zero tokens/ });
    expect(decodeOne(v2Fill(0, 5_000_001n, 5_000_000n))).toMatchObject({ reason: /price above 1/ });
    expect(decodeOne(v1Fill(0n, 42n, 0n, 0n))).toMatchObject({ reason: /exchangeV1\.OrderFilled: fill of zero/ });
    expect(decodeOne(v2Fill(1, 1_000_000n, 500_000n, MAX_UINT256))).toMatchObject({ reason: /fee amount/ });
  });

  it('property: any amounts decode to a fill the contract accepts, or to a decode error', () => {
    const amount = fc.oneof(
      fc.constantFrom(0n, 1n, MAX_UINT256, 2n ** 53n, 2n ** 53n - 1n, 2n ** 128n),
      fc.bigInt({ min: 0n, max: 10n ** 16n }),
      fc.bigInt({ min: 0n, max: MAX_UINT256 }),
    );
    fc.assert(
      fc.property(fc.constantFrom<0 | 1>(0, 1), amount, amount, amount, (side, making, taking, fee) => {
        const out = decodeOne(v2Fill(side, making, taking, fee));
        if (out === null || out === undefined) throw new Error('an OrderFilled log is one of ours');
        if (out.kind === 'decodeError') {
          expect(out.reason).toMatch(/^exchangeV2\.OrderFilled: /);
          return;
        }
        if (out.kind !== 'orderFilled') throw new Error(`unexpected ${out.kind}`);
        const checked = fillSchema.safeParse({
          tx_hash: out.txHash,
          log_index: out.logIndex,
          wallet: out.maker,
          condition_id: pad('0x03'),
          side: out.side,
          token_side: 1,
          price: out.price,
          size_tokens: out.tokens,
          usd: out.usd,
          role: 'maker',
          era: out.era,
          ts: 1_777_400_000,
          fee_usd: out.feeUsd,
        });
        expect(checked.success, JSON.stringify(checked.error?.issues)).toBe(true);
        expect(out.price).toBeGreaterThan(0);
        expect(out.price).toBeLessThanOrEqual(1);
      }),
      { numRuns: 500 },
    );
  });
});

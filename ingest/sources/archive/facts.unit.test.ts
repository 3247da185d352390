/**
 * Decoded logs → events, without a node: who the trader is, what is left out, what waits, how a
 * resolution's numerators become a winner (or none), and the registry's pair in both orders.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { encodeAbiParameters, encodeEventTopics, encodePacked, keccak256, pad, toHex, type Hex } from 'viem';
import { describe, expect, it } from 'vitest';
import { negRiskAdapterAbi } from './abi.ts';
import { decodeLog, type RawLog } from './decode.ts';
import { parseConfig } from '../../../config.ts';
import { contractsOf } from './contracts.ts';
import type { DecodedLog } from './decode.ts';
import { exchangeEraAt } from '../../contract/primitives.ts';
import { factsOf } from './facts.ts';
import { positionId } from './positions.ts';
import { TokenDirectory } from './tokens.ts';

const config = parseConfig({ POLYGON_RPC_URL: 'http://127.0.0.1:1' }).archive!;
const contracts = contractsOf(config);
const USDC: Hex = '0x2791bca1f2de4661ed88a30c99a7a9449aa84174';
const CONDITION: Hex = `0x${'c1'.repeat(32)}`;
const TOKEN1 = positionId(USDC, CONDITION, 1n);
const TOKEN2 = positionId(USDC, CONDITION, 2n);
const WALLET: Hex = `0x${'aa'.repeat(20)}`;
const OTHER: Hex = `0x${'bb'.repeat(20)}`;
const position = {
  txHash: `0x${'11'.repeat(32)}` as Hex,
  logIndex: 7,
  blockNumber: 90_000_000,
  blockTimestamp: 1_780_000_000,
};

function fill(overrides: Partial<Extract<DecodedLog, { kind: 'orderFilled' }>> = {}): DecodedLog {
  return {
    ...position,
    address: config.contracts.ctfExchangeV2,
    kind: 'orderFilled',
    era: 'v2',
    orderHash: `0x${'00'.repeat(32)}`,
    maker: WALLET,
    taker: OTHER,
    tokenId: TOKEN2,
    side: 'BUY',
    tokens: 10,
    usd: 3,
    price: 0.3,
    fee: 0,
    feeUnit: 'usd',
    feeUsd: 0,
    ...overrides,
  };
}

function registered(directory: TokenDirectory, token0: bigint, token1: bigint) {
  return factsOf(
    {
      ...position,
      address: config.contracts.negRiskExchange,
      kind: 'tokenRegistered',
      token0,
      token1,
      conditionId: CONDITION,
    },
    1,
    directory,
    contracts,
  );
}

describe('archive facts', () => {
  it('the registry’s pair in either order names outcome 0 as token 1, once', () => {
    const directory = new TokenDirectory();
    expect(registered(directory, TOKEN2, TOKEN1)).toMatchObject({
      kind: 'events',
      markets: [
        {
          type: 'tokens',
          condition_id: CONDITION,
          token1_id: TOKEN1.toString(),
          token2_id: TOKEN2.toString(),
          neg_risk: true,
        },
      ],
    });
    expect(registered(directory, TOKEN1, TOKEN2)).toEqual({ kind: 'skipped', reason: 'not_indexed' });
    expect(directory.lookup(TOKEN2.toString())).toEqual({ conditionId: CONDITION, tokenSide: 2, negRisk: true });
  });

  it('a fill: the maker is the trader; a maker leg is a print, the taker’s own leg carries the fee and is no print', () => {
    const directory = new TokenDirectory();
    directory.add(CONDITION, TOKEN1.toString(), TOKEN2.toString(), false);
    const maker = factsOf(fill(), 1_780_000_000, directory, contracts);
    expect(maker).toMatchObject({
      kind: 'events',
      fills: [{ wallet: WALLET, side: 'BUY', token_side: 2, role: 'maker', price: 0.3 }],
      trades: [{ token_side: 2, taker_side: 'SELL', seq: 90_000_000 * 100_000 + 7 }],
    });
    expect((maker as { fills: Array<{ fee_usd?: number }> }).fills[0]!.fee_usd).toBeUndefined();
    const taker = factsOf(
      fill({ taker: config.contracts.ctfExchangeV2, feeUsd: 0.05, fee: 0.05 }),
      1_780_000_000,
      directory,
      contracts,
    );
    expect(taker).toMatchObject({ kind: 'events', fills: [{ role: 'taker', fee_usd: 0.05 }], trades: [] });
  });

  it('an unknown token waits; a contract as the trader or stakeholder is left out', () => {
    expect(factsOf(fill(), 1, new TokenDirectory(), contracts)).toEqual({
      kind: 'pending',
      waitingFor: `token ${TOKEN2.toString()}`,
    });
    expect(factsOf(fill({ maker: config.contracts.negRiskAdapter }), 1, new TokenDirectory(), contracts)).toEqual({
      kind: 'skipped',
      reason: 'contract_trader',
    });
    const split = {
      ...position,
      address: config.contracts.conditionalTokens,
      kind: 'split' as const,
      source: 'ctf' as const,
      conditionId: CONDITION,
      usd: 5,
      collateral: USDC,
      binaryTopLevel: true,
    };
    expect(
      factsOf({ ...split, stakeholder: config.contracts.negRiskExchange }, 1, new TokenDirectory(), contracts),
    ).toEqual({ kind: 'skipped', reason: 'contract_stakeholder' });
    expect(factsOf({ ...split, stakeholder: WALLET }, 1_780_000_000, new TokenDirectory(), contracts)).toMatchObject({
      kind: 'events',
      legs: [{ wallet: WALLET, kind: 'SPLIT', usd: 5, tokens: 5, era: 'v2' }],
    });
    expect(
      factsOf({ ...split, stakeholder: WALLET, binaryTopLevel: false }, 1, new TokenDirectory(), contracts),
    ).toEqual({ kind: 'skipped', reason: 'nested_or_non_binary' });
  });

  it('era: a leg by its time against the cut-over the upstream uses, a fill by the exchange that emitted it', () => {
    // The V2 exchange was deployed (block 84,902,353) weeks before trading moved to it (the cut-over).
    const deployed = Date.UTC(2026, 2, 31, 12) / 1000;
    const cutOver = Date.UTC(2026, 3, 28, 11, 15) / 1000;
    expect(contracts.v2StartTs).toBe(cutOver);
    const directory = new TokenDirectory();
    directory.add(CONDITION, TOKEN1.toString(), TOKEN2.toString(), false);
    const split = {
      ...position,
      address: config.contracts.conditionalTokens,
      kind: 'split' as const,
      source: 'ctf' as const,
      conditionId: CONDITION,
      usd: 5,
      collateral: USDC,
      binaryTopLevel: true,
      stakeholder: WALLET,
    };
    const eraOfLeg = (ts: number, blockNumber: number) => {
      const outcome = factsOf({ ...split, blockNumber }, ts, directory, contracts);
      return outcome.kind === 'events' ? outcome.legs.map((leg) => leg.era) : outcome.kind;
    };
    // Between the V2 exchange's deployment and the cut-over (after block 84,902,353): V1, as the upstream dates it.
    expect(eraOfLeg(deployed + 86_400, 85_000_000)).toEqual(['v1']);
    expect(eraOfLeg(cutOver - 1, 86_100_000)).toEqual(['v1']);
    expect(eraOfLeg(cutOver, 86_100_001)).toEqual(['v2']);
    // The upstream's mapping of a leg at those times agrees.
    expect(
      [deployed + 86_400, cutOver - 1, cutOver].map((ts) => exchangeEraAt(ts, parseConfig({}).upstream.v2StartTs)),
    ).toEqual(['v1', 'v1', 'v2']);
    // A fill keeps the era its exchange gives it, whatever its time: a V2 exchange's test trickle before the cut-over is V2.
    const early = factsOf(fill({ era: 'v2' }), deployed + 86_400, directory, contracts);
    expect(early).toMatchObject({ kind: 'events', fills: [{ era: 'v2' }] });
    const lateV1 = factsOf(
      fill({ era: 'v1', address: config.contracts.ctfExchange }),
      cutOver + 60,
      directory,
      contracts,
    );
    expect(lateV1).toMatchObject({ kind: 'events', fills: [{ era: 'v1' }] });
  });

  it('payout numerators: a winner when one is zero, none (a split payout) otherwise', () => {
    const resolution = (payoutNumerators: bigint[]) =>
      factsOf(
        {
          ...position,
          address: config.contracts.conditionalTokens,
          kind: 'resolution',
          conditionId: CONDITION,
          oracle: OTHER,
          questionId: CONDITION,
          outcomeSlotCount: payoutNumerators.length,
          payoutNumerators,
        },
        1_780_000_000,
        new TokenDirectory(),
        contracts,
      );
    expect(resolution([1n, 0n])).toMatchObject({
      markets: [{ type: 'resolution', winner_token_side: 1, payout_numerators: [1, 0] }],
    });
    expect(resolution([0n, 1n])).toMatchObject({ markets: [{ winner_token_side: 2, payout_numerators: [0, 1] }] });
    expect(resolution([1n, 1n])).toMatchObject({ markets: [{ winner_token_side: null, payout_numerators: [1, 1] }] });
    expect(resolution([1n, 0n, 0n])).toEqual({ kind: 'skipped', reason: 'non_binary_condition' });
  });

  it('payout numerators beyond what the contract carries are left out, not published', () => {
    const resolution = factsOf(
      {
        ...position,
        address: config.contracts.conditionalTokens,
        kind: 'resolution',
        conditionId: CONDITION,
        oracle: OTHER,
        questionId: CONDITION,
        outcomeSlotCount: 2,
        payoutNumerators: [2n ** 60n, 0n],
      },
      1_780_000_000,
      new TokenDirectory(),
      contracts,
    );
    expect(resolution).toEqual({ kind: 'skipped', reason: 'unsupported' });
  });
});

/**
 * NegRiskAdapter PositionsConverted → position legs. The expected legs are computed here from the rule of
 * DECODING.md and the CTF's getConditionId (keccak256(oracle = the adapter, questionId, 2); question i's id is
 * the market id with its last byte i), never from the archive's own helpers.
 */
describe('neg-risk conversions', () => {
  const ONCHAIN = path.resolve(import.meta.dirname, '../../../../shared/data/polymarket/onchain');
  const expected = JSON.parse(readFileSync(path.join(ONCHAIN, 'expected_decodes.json'), 'utf8')) as Record<
    string,
    Record<string, unknown>
  >;
  const ADAPTER = config.contracts.negRiskAdapter;
  const conditionOf = (marketId: Hex, index: number) =>
    keccak256(
      encodePacked(
        ['address', 'bytes32', 'uint256'],
        [ADAPTER, `${marketId.slice(0, 64)}${index.toString(16).padStart(2, '0')}` as Hex, 2n],
      ),
    );
  /** A directory that knows questions 0..count-1 of a market (as TokenRegistered or Gamma would tell it). */
  const directoryWith = (marketId: Hex, count: number) => {
    const directory = new TokenDirectory();
    for (let index = 0; index < count; index++)
      directory.add(conditionOf(marketId, index), `${9000 + index * 2}`, `${9001 + index * 2}`, true);
    return directory;
  };
  type Leg = {
    wallet: string;
    condition_id: string;
    kind: string;
    tokens: number;
    usd: number;
    tx_hash: string;
    log_index: number;
    ts: number;
  };
  const legsOf = (outcome: ReturnType<typeof factsOf>): Leg[] => {
    expect(outcome.kind).toBe('events');
    return (outcome as { legs: Leg[] }).legs;
  };

  it('the recorded conversion (vike-trader): made by the NegRisk collateral adapter for a user, so left out; a user’s own: NO of question 10 out, YES of every other question in, no USDC', () => {
    const want = expected['vike-trader/negrisk_adapter_positions_converted.json']!;
    const raw = JSON.parse(
      readFileSync(path.join(ONCHAIN, 'vike-trader/negrisk_adapter_positions_converted.json'), 'utf8'),
    ) as RawLog;
    const marketId = want['market_id'] as Hex;
    const amount = want['amount'] as number;
    const questions = 12;
    const directory = directoryWith(marketId, questions);
    // 0xada2…eaab is Polymarket's NegRiskCtfCollateralAdapter (pUSD): never a trader.
    expect(want['stakeholder']).toBe('0xada2005600dec949baf300f4c6120000bdb6eaab');
    expect(factsOf(decodeLog(raw)!, 1_780_000_000, directory, contracts)).toEqual({
      kind: 'skipped',
      reason: 'contract_stakeholder',
    });

    // The same log as a user's own conversion (the stakeholder topic replaced by a wallet).
    const own = decodeLog({ ...raw, topics: [raw.topics[0]!, pad(WALLET, { size: 32 }), ...raw.topics.slice(2)] })!;
    const legs = legsOf(factsOf(own, 1_780_000_000, directory, contracts));
    // index_set 1024 = question 10 alone.
    expect(Number(want['index_set'])).toBe(1 << 10);
    const wantLegs = Array.from({ length: questions }, (_, index) => ({
      wallet: WALLET,
      condition_id: conditionOf(marketId, index),
      kind: index === 10 ? 'CONVERT_OUT' : 'CONVERT_IN',
      tokens: amount,
      usd: 0,
      tx_hash: raw.transactionHash,
      log_index: Number(raw.logIndex),
      ts: 1_780_000_000,
    }));
    expect(legs).toEqual(wantLegs.map((leg) => expect.objectContaining(leg)));
  });

  it('an ABI-encoded conversion of three questions of five: three NO legs share 2 × amount of USDC, two YES legs', () => {
    const marketId = `0x${'5e'.repeat(31)}00` as Hex;
    const stakeholder = WALLET;
    const indexSet = (1n << 0n) | (1n << 2n) | (1n << 3n);
    const raw: RawLog = {
      address: ADAPTER,
      topics: encodeEventTopics({
        abi: negRiskAdapterAbi,
        eventName: 'PositionsConverted',
        args: { stakeholder, marketId, indexSet },
      }) as Hex[],
      data: encodeAbiParameters([{ type: 'uint256' }], [7_000_000n]),
      blockNumber: toHex(90_000_000),
      transactionHash: pad('0x77', { size: 32 }),
      logIndex: '0x3',
      blockTimestamp: toHex(1_780_000_000),
    };
    const legs = legsOf(factsOf(decodeLog(raw)!, 1_780_000_000, directoryWith(marketId, 5), contracts));
    const byCondition = new Map(legs.map((leg) => [leg.condition_id, leg]));
    expect(legs.length).toBe(5);
    for (const index of [0, 2, 3])
      expect(byCondition.get(conditionOf(marketId, index))).toMatchObject({
        wallet: stakeholder,
        kind: 'CONVERT_OUT',
        tokens: 7,
        usd: (7 * 2) / 3,
      });
    for (const index of [1, 4])
      expect(byCondition.get(conditionOf(marketId, index))).toMatchObject({
        wallet: stakeholder,
        kind: 'CONVERT_IN',
        tokens: 7,
        usd: 0,
      });
    // Value is conserved: whichever question wins, what the legs give and take is worth nothing net.
    for (let winner = 0; winner < 5; winner++) {
      const value = legs.reduce((sum, leg) => {
        const index = [0, 1, 2, 3, 4].find((candidate) => conditionOf(marketId, candidate) === leg.condition_id)!;
        const tokenValue = leg.kind === 'CONVERT_IN' ? (index === winner ? 1 : 0) : index === winner ? 0 : 1;
        return (
          sum + (leg.kind === 'CONVERT_IN' ? leg.tokens * tokenValue - leg.usd : leg.usd - leg.tokens * tokenValue)
        );
      }, 0);
      expect(value).toBeCloseTo(0, 9);
    }
  });

  it('a conversion of a question no market claims waits; the adapter as stakeholder is left out', () => {
    const marketId = `0x${'6f'.repeat(31)}00` as Hex;
    const converted = {
      ...position,
      address: ADAPTER,
      kind: 'converted' as const,
      marketId,
      indexSet: 1n << 4n,
      usd: 3,
    };
    expect(factsOf({ ...converted, stakeholder: WALLET }, 1, directoryWith(marketId, 3), contracts)).toEqual({
      kind: 'pending',
      waitingFor: `neg-risk question 4 of market ${marketId} (condition ${conditionOf(marketId, 4)})`,
    });
    expect(factsOf({ ...converted, stakeholder: ADAPTER }, 1, directoryWith(marketId, 5), contracts)).toEqual({
      kind: 'skipped',
      reason: 'contract_stakeholder',
    });
    expect(
      factsOf({ ...converted, stakeholder: WALLET, indexSet: 0n }, 1, directoryWith(marketId, 5), contracts),
    ).toEqual({ kind: 'skipped', reason: 'empty_conversion' });
  });
});

/**
 * Decoded logs → events, without a node: who the trader is, what is left out, what waits, how a
 * resolution's numerators become a winner (or none), and the registry's pair in both orders.
 */
import type { Hex } from 'viem';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../../config.ts';
import { contractsOf } from './archive.ts';
import type { DecodedLog } from './decode.ts';
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
const position = { txHash: `0x${'11'.repeat(32)}` as Hex, logIndex: 7, blockNumber: 90_000_000, blockTimestamp: 1_780_000_000 };

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
  return factsOf({ ...position, address: config.contracts.negRiskExchange, kind: 'tokenRegistered', token0, token1, conditionId: CONDITION }, 1, directory, contracts);
}

describe('archive facts', () => {
  it('the registry’s pair in either order names outcome 0 as token 1, once', () => {
    const directory = new TokenDirectory();
    expect(registered(directory, TOKEN2, TOKEN1)).toMatchObject({
      kind: 'events',
      markets: [{ type: 'tokens', condition_id: CONDITION, token1_id: TOKEN1.toString(), token2_id: TOKEN2.toString(), neg_risk: true }],
    });
    expect(registered(directory, TOKEN1, TOKEN2)).toEqual({ kind: 'skipped', reason: 'not_indexed' });
    expect(directory.lookup(TOKEN2.toString())).toEqual({ conditionId: CONDITION, tokenSide: 2, negRisk: true });
  });

  it('a fill: the maker is the trader; a maker leg is a print, the taker’s own leg carries the fee and is no print', () => {
    const directory = new TokenDirectory();
    directory.add(CONDITION, TOKEN1.toString(), TOKEN2.toString(), false);
    const maker = factsOf(fill(), 1_780_000_000, directory, contracts);
    expect(maker).toMatchObject({ kind: 'events', fills: [{ wallet: WALLET, side: 'BUY', token_side: 2, role: 'maker', price: 0.3 }], trades: [{ token_side: 2, taker_side: 'SELL', seq: 90_000_000 * 100_000 + 7 }] });
    expect((maker as { fills: Array<{ fee_usd?: number }> }).fills[0]!.fee_usd).toBeUndefined();
    const taker = factsOf(fill({ taker: config.contracts.ctfExchangeV2, feeUsd: 0.05, fee: 0.05 }), 1_780_000_000, directory, contracts);
    expect(taker).toMatchObject({ kind: 'events', fills: [{ role: 'taker', fee_usd: 0.05 }], trades: [] });
  });

  it('an unknown token waits; a contract as the trader or stakeholder is left out', () => {
    expect(factsOf(fill(), 1, new TokenDirectory(), contracts)).toEqual({ kind: 'pending', tokenId: TOKEN2.toString() });
    expect(factsOf(fill({ maker: config.contracts.negRiskAdapter }), 1, new TokenDirectory(), contracts)).toEqual({ kind: 'skipped', reason: 'contract_trader' });
    const split = { ...position, address: config.contracts.conditionalTokens, kind: 'split' as const, source: 'ctf' as const, conditionId: CONDITION, usd: 5, collateral: USDC, binaryTopLevel: true };
    expect(factsOf({ ...split, stakeholder: config.contracts.negRiskExchange }, 1, new TokenDirectory(), contracts)).toEqual({ kind: 'skipped', reason: 'contract_stakeholder' });
    expect(factsOf({ ...split, stakeholder: WALLET }, 1_780_000_000, new TokenDirectory(), contracts)).toMatchObject({ kind: 'events', legs: [{ wallet: WALLET, kind: 'SPLIT', usd: 5, tokens: 5, era: 'v2' }] });
    expect(factsOf({ ...split, stakeholder: WALLET, binaryTopLevel: false }, 1, new TokenDirectory(), contracts)).toEqual({ kind: 'skipped', reason: 'nested_or_non_binary' });
  });

  it('payout numerators: a winner when one is zero, none (a split payout) otherwise', () => {
    const resolution = (payoutNumerators: bigint[]) =>
      factsOf({ ...position, address: config.contracts.conditionalTokens, kind: 'resolution', conditionId: CONDITION, oracle: OTHER, questionId: CONDITION, outcomeSlotCount: payoutNumerators.length, payoutNumerators }, 1_780_000_000, new TokenDirectory(), contracts);
    expect(resolution([1n, 0n])).toMatchObject({ markets: [{ type: 'resolution', winner_token_side: 1, payout_numerators: [1, 0] }] });
    expect(resolution([0n, 1n])).toMatchObject({ markets: [{ winner_token_side: 2, payout_numerators: [0, 1] }] });
    expect(resolution([1n, 1n])).toMatchObject({ markets: [{ winner_token_side: null, payout_numerators: [1, 1] }] });
    expect(resolution([1n, 0n, 0n])).toEqual({ kind: 'skipped', reason: 'non_binary_condition' });
  });
});

/**
 * Golden tests on real Polygon logs (../shared/data/polymarket/onchain/): every recorded log decodes to what
 * its publishing project asserted (expected_decodes.json). The bytes are right; a disagreement is ours.
 */
import { v2OrderFilled } from '../../../test/harness/chain-world.ts';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { decodeEventLog, pad, toHex, type Hex } from 'viem';
import { describe, expect, it } from 'vitest';
import { EVENTS_BY_TOPIC0 } from './abi.ts';
import { decodeLog, type DecodedLog, type RawLog } from './decode.ts';
import { negRiskConditionId, orderRegisteredPair } from './positions.ts';

const ONCHAIN = path.resolve(import.meta.dirname, '../../../../shared/data/polymarket/onchain');
const HTTP = path.resolve(import.meta.dirname, '../../../../shared/data/polymarket/http');
const expected = JSON.parse(readFileSync(path.join(ONCHAIN, 'expected_decodes.json'), 'utf8')) as Record<
  string,
  Record<string, unknown>
>;

function logFile(name: string): RawLog {
  return JSON.parse(readFileSync(path.join(ONCHAIN, name), 'utf8')) as RawLog;
}

function decoded(name: string): DecodedLog {
  const log = decodeLog(logFile(name));
  expect(log, name).not.toBeNull();
  return log!;
}

function as<K extends DecodedLog['kind']>(log: DecodedLog, kind: K): Extract<DecodedLog, { kind: K }> {
  expect(log.kind).toBe(kind);
  return log as Extract<DecodedLog, { kind: K }>;
}

const PRICE_TOLERANCE = 1e-12;

describe('recorded logs decode to what their authors asserted', () => {
  const files = ['vike-trader', 'polyprinter'].flatMap((folder) =>
    readdirSync(path.join(ONCHAIN, folder))
      .filter((file) => file.endsWith('.json'))
      .map((file) => `${folder}/${file}`),
  );

  it('every recorded log file has an assertion and decodes', () => {
    expect(files.length).toBe(14);
    for (const file of files) {
      expect(expected[file], file).toBeDefined();
      expect(decodeLog(logFile(file)), file).not.toBeNull();
    }
  });

  it('V2 OrderFilled, standard exchange, maker SELL (vike-trader)', () => {
    const want = expected['vike-trader/v2_orderfilled_standard_sell.json']!;
    const log = decoded('vike-trader/v2_orderfilled_standard_sell.json');
    const fill = as(log, 'orderFilled');
    expect(fill.era).toBe('v2');
    expect(fill.orderHash).toBe(want['order_hash']);
    expect(fill.maker).toBe(want['maker']);
    expect(fill.taker).toBe(want['taker']);
    expect(fill.tokenId.toString()).toBe(want['token_id']);
    expect(fill.side).toBe(want['side']);
    expect(fill.tokens).toBe(want['size']);
    expect(fill.price).toBeCloseTo(want['price'] as number, 12);
    expect(fill.feeUsd).toBe(want['fee_usdc']);
    expect(fill.blockNumber).toBe(want['block']);
    expect(fill.blockTimestamp! * 1000).toBe(want['ts_ms']);
    // A maker leg: its counterparty is a wallet, not the exchange.
    expect(fill.taker).not.toBe(fill.address);
  });

  it('V1 OrderFilled, standard exchange, BUY: the fee is in outcome tokens', () => {
    const want = expected['vike-trader/v1_orderfilled_standard_buy.json']!;
    const fill = as(decoded('vike-trader/v1_orderfilled_standard_buy.json'), 'orderFilled');
    expect(fill.era).toBe('v1');
    expect(fill.orderHash).toBe(want['order_hash']);
    expect(fill.maker).toBe(want['maker']);
    expect(fill.taker).toBe(want['taker']);
    expect(fill.tokenId.toString()).toBe(want['token_id']);
    expect(fill.side).toBe(want['side']);
    expect(fill.tokens).toBe(want['size']);
    expect(Math.abs(fill.price - (want['price'] as number))).toBeLessThan(PRICE_TOLERANCE);
    expect(fill.fee).toBe(want['fee_raw_asserted_as_fee_usdc']);
    expect(fill.feeUnit).toBe('tokens');
    // The authors call it fee_usdc, but a V1 BUY's fee is in outcome tokens ([CX] Trading.sol): 1.77 tokens
    // withheld, worth 1.77 × 0.42 USD at the fill's price. fee_usd is that USD value, never the token count.
    expect(fill.feeUsd).toBeCloseTo((want['fee_raw_asserted_as_fee_usdc'] as number) * (want['price'] as number), 9);
    expect(fill.feeUsd).not.toBeCloseTo(want['fee_raw_asserted_as_fee_usdc'] as number, 3);
    expect(fill.blockNumber).toBe(want['block']);
    expect(fill.blockTimestamp! * 1000).toBe(want['ts_ms']);
  });

  it('V2 OrderFilled: the maker leg and the taker’s own-order leg of one match (polyprinter)', () => {
    const wantBuy = expected['polyprinter/v2_orderfilled_standard_buy_maker.json']!;
    const buy = as(decoded('polyprinter/v2_orderfilled_standard_buy_maker.json'), 'orderFilled');
    expect(buy.maker).toBe(wantBuy['maker']);
    expect(buy.taker).toBe(wantBuy['taker']);
    expect(buy.side).toBe(wantBuy['side']);
    expect(buy.tokenId.toString()).toBe(wantBuy['token_id']);
    expect(buy.tokens).toBe(wantBuy['shares']);
    expect(buy.price).toBeCloseTo(wantBuy['price'] as number, 12);
    expect(buy.logIndex).toBe(wantBuy['log_index']);
    expect(buy.usd).toBeCloseTo(2.3552, 9);

    const wantOwn = expected['polyprinter/v2_orderfilled_standard_takers_own_order.json']!;
    const own = as(decoded('polyprinter/v2_orderfilled_standard_takers_own_order.json'), 'orderFilled');
    expect(own.maker).toBe(wantOwn['maker']);
    expect(own.taker).toBe(wantOwn['taker']);
    expect(own.taker).toBe(own.address);
    // Same match: same tokens and USD, opposite side.
    expect(own.txHash).toBe(buy.txHash);
    expect(own.side).toBe('SELL');
    expect(own.tokens).toBe(buy.tokens);
    expect(own.usd).toBe(buy.usd);

    const wantSell = expected['polyprinter/v2_orderfilled_standard_sell_maker.json']!;
    const sell = as(decoded('polyprinter/v2_orderfilled_standard_sell_maker.json'), 'orderFilled');
    expect(sell.maker).toBe(wantSell['maker']);
    expect(sell.side).toBe(wantSell['side']);
    expect(sell.tokens).toBe(wantSell['shares']);
    expect(sell.price).toBeCloseTo(wantSell['price'] as number, 12);
    expect(sell.feeUsd).toBe(wantSell['fee_usd']);
    expect(sell.feeUnit).toBe('usd');
  });

  it('ConditionalTokens PositionSplit and PositionsMerge', () => {
    for (const [file, kind] of [
      ['vike-trader/ctf_position_split.json', 'split'],
      ['vike-trader/ctf_positions_merge.json', 'merge'],
    ] as const) {
      const want = expected[file]!;
      const leg = as(decoded(file), kind);
      expect(leg.source).toBe('ctf');
      expect(leg.stakeholder).toBe(want['stakeholder']);
      expect(leg.conditionId).toBe(want['condition_id']);
      expect(leg.usd).toBe(want['amount']);
      expect(leg.blockNumber).toBe(want['block']);
      expect(leg.binaryTopLevel).toBe(true);
      expect(leg.collateral).toBe('0x2791bca1f2de4661ed88a30c99a7a9449aa84174');
    }
  });

  it('ConditionalTokens PayoutRedemption', () => {
    const want = expected['vike-trader/ctf_payout_redemption.json']!;
    const redemption = as(decoded('vike-trader/ctf_payout_redemption.json'), 'redemption');
    expect(redemption.source).toBe('ctf');
    expect(redemption.redeemer).toBe(want['redeemer']);
    expect(redemption.conditionId).toBe(want['condition_id']);
    expect(redemption.usd).toBe(want['payout_usdc']);
    expect(redemption.indexSets.map(Number)).toEqual(want['index_sets']);
    expect(redemption.blockNumber).toBe(want['block']);
    expect(redemption.blockTimestamp! * 1000).toBe(want['ts_ms']);
  });

  it('NegRiskAdapter PayoutRedemption: per-slot amounts and the payout', () => {
    const want = expected['vike-trader/negrisk_adapter_payout_redemption.json']!;
    const redemption = as(decoded('vike-trader/negrisk_adapter_payout_redemption.json'), 'redemption');
    expect(redemption.source).toBe('negRiskAdapter');
    expect(redemption.redeemer).toBe(want['redeemer']);
    expect(redemption.conditionId).toBe(want['condition_id_topic2']);
    expect(redemption.usd).toBe(want['payout_usdc']);
    expect(redemption.amounts).toEqual((want['amounts'] as number[]).map((amount) => amount / 1e6));
  });

  it('NegRiskAdapter PositionsConverted', () => {
    const want = expected['vike-trader/negrisk_adapter_positions_converted.json']!;
    const converted = as(decoded('vike-trader/negrisk_adapter_positions_converted.json'), 'converted');
    expect(converted.stakeholder).toBe(want['stakeholder']);
    expect(converted.marketId).toBe(want['market_id']);
    expect(Number(converted.indexSet)).toBe(want['index_set']);
    expect(converted.usd).toBe(want['amount']);
    expect(converted.blockNumber).toBe(want['block']);
  });

  it('ConditionResolution: payout numerators', () => {
    const want = expected['vike-trader/ctf_condition_resolution.json']!;
    const resolution = as(decoded('vike-trader/ctf_condition_resolution.json'), 'resolution');
    expect(resolution.conditionId).toBe(want['condition_id']);
    expect(resolution.oracle).toBe(want['oracle']);
    expect(resolution.outcomeSlotCount).toBe(want['outcome_slot_count']);
    expect(resolution.payoutNumerators.map(Number)).toEqual(want['payout_numerators']);
  });

  it('ERC-1155 and USDC.e transfers (decoded, not indexed)', () => {
    const batchWant = expected['vike-trader/ctf_erc1155_transfer_batch.json']!;
    const batch = as(decoded('vike-trader/ctf_erc1155_transfer_batch.json'), 'transfer1155');
    expect(batch.from).toBe(batchWant['from']);
    expect(batch.to).toBe(batchWant['to']);
    expect(batch.ids.length).toBe(batchWant['ids_count']);
    expect(batch.values.map(Number)).toEqual(batchWant['values']);
    expect(batch.ids[0]!.toString()).toBe(batchWant['first_id_decimal']);

    const burnWant = expected['vike-trader/ctf_erc1155_transfer_single_burn.json']!;
    const burn = as(decoded('vike-trader/ctf_erc1155_transfer_single_burn.json'), 'transfer1155');
    expect(burn.to).toBe(burnWant['to']);
    expect(burn.values.map(Number)).toEqual(burnWant['values']);
    expect(burn.ids[0]!.toString()).toBe(burnWant['id_decimal']);

    const usdcWant = expected['vike-trader/usdce_transfer_redemption_payout.json']!;
    const usdc = as(decoded('vike-trader/usdce_transfer_redemption_payout.json'), 'transfer20');
    expect(usdc.from).toBe(usdcWant['from']);
    expect(usdc.to).toBe(usdcWant['to']);
    expect(Number(usdc.value) / 1e6).toBe(usdcWant['value_usdc']);
    expect(usdc.blockNumber).toBe(usdcWant['block']);
  });

  it('topic0s are the ones DECODING.md lists', () => {
    const prefixes = [...EVENTS_BY_TOPIC0.keys()].map((topic0) => topic0.slice(0, 10));
    for (const prefix of [
      '0xd0a08e8c',
      '0x63bf4d16',
      '0xbc9a2432',
      '0xd543adfd',
      '0x2e6bb91f',
      '0x6f13ca62',
      '0x2682012a',
      '0xb44d84d3',
      '0xbbed930d',
      '0xba33ac50',
      '0xb03d19dd',
      '0x9140a6a2',
    ]) {
      expect(prefixes).toContain(prefix);
    }
  });

  it('a log of an unknown event is not ours; a known topic0 with bad bytes is an error with a reason', () => {
    const log = logFile('vike-trader/v2_orderfilled_standard_sell.json');
    expect(decodeLog({ ...log, topics: ['0x' + '11'.repeat(32), ...log.topics.slice(1)] })).toBeNull();
    expect(() => decodeLog({ ...log, data: '0x1234' })).toThrow(/exchangeV2\.OrderFilled/);
  });
});

describe('nautilus taker-leg vectors (amounts and fees of real V2 fills), encoded with viem and decoded back', () => {
  const vectors = JSON.parse(
    readFileSync(path.join(ONCHAIN, 'nautilus/chain_order_filled_taker_fees.json'), 'utf8'),
  ) as Array<Record<string, string>>;
  const exchanges: Record<string, Hex> = {
    standard: '0xe111180000d2663c0091e4f400237545b87b996b',
    neg_risk: '0xe2222d279d744050d28e00520010520000310f59',
  };

  it.each(vectors.map((vector, index) => [index, vector] as const))('vector %i', (_index, vector) => {
    const side = vector['side'] === 'BUY' ? 0 : 1;
    const exchange = exchanges[vector['exchange']!]!;
    const { topics, data } = v2OrderFilled({
      orderHash: pad('0x01'),
      maker: '0x00000000000000000000000000000000000000aa',
      taker: exchange,
      side,
      tokenId: 42n,
      making: BigInt(vector['maker_amount_filled']!),
      taking: BigInt(vector['taker_amount_filled']!),
      fee: BigInt(vector['fee']!),
    });
    const fill = as(
      decodeLog({
        address: exchange,
        topics: topics as Hex[],
        data,
        blockNumber: toHex(1),
        transactionHash: pad('0x02'),
        logIndex: '0x0',
      })!,
      'orderFilled',
    );
    const shares = Number(vector[side === 0 ? 'taker_amount_filled' : 'maker_amount_filled']) / 1e6;
    expect(fill.side).toBe(vector['side']);
    expect(fill.tokens).toBe(shares);
    expect(fill.feeUsd).toBe(Number(vector['fee']) / 1e6);
    // The CLOB's trade price agrees with USD ÷ shares to within the amounts' rounding.
    expect(Math.abs(fill.price - Number(vector['price']))).toBeLessThan(1e-5);
    // The fee rule of DECODING.md reproduces the fee from the trade price and the market's fee rate.
    const p = Number(vector['price']);
    expect(fill.feeUsd).toBeCloseTo(Math.floor(Number(vector['fee_rate']) * shares * p * (1 - p) * 1e5) / 1e5, 5);
  });
});

describe('token order of a registered pair (outcome 0 first), checked against Gamma clobTokenIds', () => {
  const COLLATERALS: Hex[] = [
    '0x2791bca1f2de4661ed88a30c99a7a9449aa84174',
    '0x3a3bd7bb9528e159577f7c2e685cc81a765002e2',
  ];
  const markets: Array<{ conditionId: Hex; tokens: [string, string] }> = [];
  const walk = (node: unknown) => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') {
      const record = node as Record<string, unknown>;
      if (typeof record['clobTokenIds'] === 'string' && typeof record['conditionId'] === 'string') {
        const tokens = JSON.parse(record['clobTokenIds']) as string[];
        if (tokens.length === 2)
          markets.push({ conditionId: record['conditionId'] as Hex, tokens: [tokens[0]!, tokens[1]!] });
      }
      Object.values(record).forEach(walk);
    }
  };
  for (const file of readdirSync(path.join(HTTP, 'gamma')))
    walk(JSON.parse(readFileSync(path.join(HTTP, 'gamma', file), 'utf8')));

  it('orders both orders of every pair the same way (USDC.e and the NegRisk wrapped collateral)', () => {
    let matched = 0;
    for (const market of markets) {
      const [first, second] = market.tokens.map(BigInt) as [bigint, bigint];
      const forward = orderRegisteredPair(first, second, market.conditionId, COLLATERALS);
      const backward = orderRegisteredPair(second, first, market.conditionId, COLLATERALS);
      if (forward === null) continue; // a legacy market on another collateral
      matched++;
      expect(forward.token1.toString()).toBe(market.tokens[0]);
      expect(backward!.token1.toString()).toBe(market.tokens[0]);
      expect(backward!.token2.toString()).toBe(market.tokens[1]);
    }
    expect(matched).toBeGreaterThanOrEqual(5);
  });
});

describe('neg-risk question conditions, checked against Gamma and the CLOB', () => {
  const ADAPTER: Hex = '0xd91e80cf2e7be2e162c6513ced06f1dd0da35296';
  const pairs: Array<{ conditionId: string; questionId: string; marketId: string }> = [];
  const walk = (node: unknown) => {
    if (Array.isArray(node)) node.forEach(walk);
    else if (node && typeof node === 'object') {
      const record = node as Record<string, unknown>;
      const conditionId = (record['conditionId'] ?? record['condition_id']) as string | undefined;
      const questionId = (record['questionID'] ?? record['question_id']) as string | undefined;
      const marketId = (record['negRiskMarketID'] ?? record['neg_risk_market_id']) as string | undefined;
      if (conditionId && questionId && marketId) pairs.push({ conditionId, questionId, marketId });
      Object.values(record).forEach(walk);
    }
  };
  for (const folder of ['gamma', 'clob'])
    for (const file of readdirSync(path.join(HTTP, folder)))
      walk(JSON.parse(readFileSync(path.join(HTTP, folder, file), 'utf8')));

  it('question i of a market is the market id with last byte i; its condition is keccak256(adapter, questionId, 2)', () => {
    expect(pairs.length).toBeGreaterThanOrEqual(3);
    for (const pair of pairs) {
      const index = Number.parseInt(pair.questionId.slice(-2), 16);
      expect(pair.questionId.slice(0, -2)).toBe(pair.marketId.slice(0, -2));
      expect(negRiskConditionId(ADAPTER, pair.marketId as Hex, index)).toBe(pair.conditionId.toLowerCase());
    }
  });
});

describe('decodeLog reads the same arguments as viem’s decodeEventLog', () => {
  it('every recorded log: each argument equal', () => {
    for (const folder of ['vike-trader', 'polyprinter']) {
      for (const file of readdirSync(path.join(ONCHAIN, folder))) {
        const raw = logFile(`${folder}/${file}`);
        const known = EVENTS_BY_TOPIC0.get(raw.topics[0]!.toLowerCase())!;
        const viem = decodeEventLog({
          abi: [known.event],
          topics: raw.topics as [Hex, ...Hex[]],
          data: raw.data as Hex,
          strict: true,
        }).args as Record<string, unknown>;
        const ours = decodeLog(raw)!;
        // A few named arguments that each family's rule reads, compared as viem decodes them.
        if (ours.kind === 'orderFilled') {
          expect(ours.maker).toBe((viem['maker'] as string).toLowerCase());
          expect(ours.taker).toBe((viem['taker'] as string).toLowerCase());
          expect(ours.orderHash).toBe(viem['orderHash']);
          expect(ours.tokenId).toBe(
            viem['tokenId'] ?? (viem['makerAssetId'] === 0n ? viem['takerAssetId'] : viem['makerAssetId']),
          );
        } else if (ours.kind === 'split' || ours.kind === 'merge') {
          expect(ours.stakeholder).toBe((viem['stakeholder'] as string).toLowerCase());
          expect(ours.conditionId).toBe(viem['conditionId']);
          expect(ours.usd).toBe(Number(viem['amount']) / 1e6);
        } else if (ours.kind === 'converted') {
          expect(ours.indexSet).toBe(viem['indexSet']);
          expect(ours.marketId).toBe(viem['marketId']);
        } else if (ours.kind === 'redemption') {
          expect(ours.redeemer).toBe((viem['redeemer'] as string).toLowerCase());
          expect(ours.usd).toBe(Number(viem['payout']) / 1e6);
        }
      }
    }
  });

  it('address inputs, indexed and in data, even with bytes set above their 20: the same address as viem decodes, in lower case', () => {
    for (const file of [
      'vike-trader/v2_orderfilled_standard_sell.json',
      ...readdirSync(path.join(ONCHAIN, 'vike-trader'))
        .filter((name) => /split|merge|redemption/i.test(name))
        .map((name) => `vike-trader/${name}`),
    ]) {
      const log = logFile(file);
      const known = EVENTS_BY_TOPIC0.get(log.topics[0]!.toLowerCase())!;
      // Dirty the upper 12 bytes of every indexed address word (viem reads only the last 20 bytes of it).
      const topics = log.topics.map((topic, index) =>
        index > 0 && known.indexed[index - 1]!.type === 'address' ? `0x${'ab'.repeat(12)}${topic.slice(26)}` : topic,
      );
      const viem = decodeEventLog({
        abi: [known.event],
        topics: topics as [Hex, ...Hex[]],
        data: log.data as Hex,
        strict: true,
      }).args as Record<string, unknown>;
      const ours = decodeLog({ ...log, topics })! as unknown as Record<string, unknown>;
      const addresses = known.event.inputs.filter((input) => input.type === 'address');
      expect(addresses.length, file).toBeGreaterThan(0);
      for (const input of addresses) {
        const field = {
          maker: 'maker',
          taker: 'taker',
          stakeholder: 'stakeholder',
          redeemer: 'redeemer',
          collateralToken: 'collateral',
        }[input.name!];
        if (field === undefined) continue;
        expect(ours[field], `${file} ${input.name}`).toBe((viem[input.name!] as string).toLowerCase());
        expect(ours[field]).toMatch(/^0x[0-9a-f]{40}$/);
      }
    }
  });

  it('bad words at the boundary are decode errors with the rule named: short topics, a bad hash, a bad quantity', () => {
    const log = logFile('vike-trader/v2_orderfilled_standard_sell.json');
    expect(() => decodeLog({ ...log, topics: [log.topics[0]!, '0x1234', ...log.topics.slice(2)] })).toThrow(
      /exchangeV2\.OrderFilled: topic 1/,
    );
    expect(() => decodeLog({ ...log, transactionHash: '0xnothex' })).toThrow(
      /exchangeV2\.OrderFilled: transactionHash/,
    );
    expect(() => decodeLog({ ...log, blockNumber: 'twelve' })).toThrow(/exchangeV2\.OrderFilled: blockNumber/);
  });
});

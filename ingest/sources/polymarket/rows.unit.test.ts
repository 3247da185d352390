import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_AMOUNT } from '../../contract/primitives.ts';
import { TOPICS } from '../../contract/topics.ts';
import { SEQ_PER_BLOCK } from '../archive/facts.ts';
import { parseJsonLine } from './readers.ts';
import { digestIdentity, numberOf, parseExportRow, syntheticLogIndex, tradeSeq, type ParsedRow } from './rows.ts';

const WALLET = '0x6031B6EED1C97E853C6E0F03AD3CE3529351F96D';
const OTHER_WALLET = '0x961afce6bd9aec79c5cf09d2d4dac2b434b23361';
const CONDITION = '0xe62f73808cec30539e027d4fb3d386951e41fd32489686cc5ab099eeb1cdb591';
const TX = '0xdb1460f8968e9cfcf50544c66ae6c8f6b2538f7b2793a5f9505832a79d38e02b';

/** An /activity TRADE row as the CSV export has it: every value a string. */
function csvTradeRow(overrides: Record<string, string> = {}): Record<string, string> {
  return {
    timestamp: '1767556641',
    datetime: '2026-01-04 19:57:21',
    type: 'TRADE',
    side: 'BUY',
    proxyWallet: WALLET,
    conditionId: CONDITION,
    asset: '7569193888527361373004542539606397796548900909995441660423726239146791440889',
    outcomeIndex: '0',
    outcome: 'Up',
    size: '22',
    usdcSize: '21.78',
    price: '0.99',
    transactionHash: TX,
    title: 'Bitcoin Up or Down - January 4, 2:45PM-3:00PM ET',
    slug: 'btc-updown-15m-1767555900',
    eventSlug: 'btc-updown-15m-1767555900',
    icon: 'https://polymarket-upload.s3.us-east-2.amazonaws.com/BTC+fullsize.png',
    name: 'gabagool22',
    pseudonym: 'Grown-Cantaloupe',
    bio: '',
    profileImage: '',
    profileImageOptimized: '',
    ...overrides,
  };
}

/** The same trade as a JSON /activity row: numbers as numbers. */
function jsonTradeRow(): Record<string, unknown> {
  const row: Record<string, unknown> = { ...csvTradeRow() };
  for (const key of ['timestamp', 'outcomeIndex', 'size', 'usdcSize', 'price']) row[key] = Number(row[key]);
  delete row.datetime;
  return row;
}

function expectFill(parsed: ParsedRow) {
  if (parsed.kind !== 'fill') throw new Error(`expected a fill, got ${JSON.stringify(parsed)}`);
  return parsed;
}

function expectRejected(parsed: ParsedRow): string {
  if (parsed.kind !== 'rejected') throw new Error(`expected a rejection, got ${parsed.kind}`);
  return parsed.reason;
}

describe('parseExportRow: TRADE rows', () => {
  it('maps an /activity TRADE row to an upstream fill and a trade print with the same id', () => {
    const { fill, trade, market } = expectFill(parseExportRow(csvTradeRow(), { fixed: 'v2' }));
    expect(fill).toMatchObject({
      tx_hash: TX,
      wallet: WALLET.toLowerCase(),
      condition_id: CONDITION,
      side: 'BUY',
      token_side: 1,
      price: 0.99,
      size_tokens: 22,
      usd: 21.78,
      role: 'taker',
      era: 'v2',
      ts: 1767556641,
      name: 'gabagool22',
    });
    expect(fill.log_index).toBe(trade.log_index);
    expect(trade).toMatchObject({
      tx_hash: TX,
      condition_id: CONDITION,
      token_side: 1,
      price: 0.99,
      size_tokens: 22,
      usd: 21.78,
      ts: 1767556641,
    });
    expect(trade.taker_side).toBeUndefined();
    expect(trade.seq).toBe(tradeSeq(fill.log_index));
    expect(market).toEqual({
      conditionId: CONDITION,
      title: 'Bitcoin Up or Down - January 4, 2:45PM-3:00PM ET',
      slug: 'btc-updown-15m-1767555900',
      icon: 'https://polymarket-upload.s3.us-east-2.amazonaws.com/BTC+fullsize.png',
      ts: 1767556641,
      outcome: { tokenSide: 1, name: 'Up' },
    });
  });

  it('maps outcomeIndex 1 to token 2 and keeps the price in the token frame', () => {
    const { fill } = expectFill(
      parseExportRow(csvTradeRow({ outcomeIndex: '1', outcome: 'Down', price: '0.3' }), { fixed: 'v1' }),
    );
    expect(fill).toMatchObject({ token_side: 2, price: 0.3, era: 'v1' });
  });

  it('a Protocol V2 market’s row (a real row with V2 ids: none is recorded): a 31-byte conditionId gets its zero byte; a row naming only a position id takes market and side from its bits', () => {
    // A NegRiskModule position: module 2, event base 0xcafe, arity 3, condition index 1, outcome NO.
    const position = (2n << 248n) | (0xcafen << 120n) | (3n << 104n) | (1n << 8n) | 1n;
    const condition = `0x${(position & ~0xffn).toString(16).padStart(64, '0')}`;
    const named = expectFill(
      parseExportRow(
        csvTradeRow({ conditionId: condition.slice(0, 64), asset: position.toString(), outcomeIndex: '1' }),
        {
          fixed: 'v2',
        },
      ),
    );
    expect(named.fill).toMatchObject({ condition_id: condition, token_side: 2 });
    const row = csvTradeRow({ asset: position.toString() }) as Record<string, string | undefined>;
    delete row.conditionId;
    delete row.outcomeIndex;
    expect(expectFill(parseExportRow(row, { fixed: 'v2' })).fill).toMatchObject({
      condition_id: condition,
      token_side: 2,
    });
    // A CTF token id (a V1 market) names nothing by its bits: the row still needs its conditionId.
    const ctf = csvTradeRow() as Record<string, string | undefined>;
    delete ctf.conditionId;
    expect(expectRejected(parseExportRow(ctf, { fixed: 'v2' }))).toMatch(/condition_id/);
  });

  it('stamps the era by the row’s time against the cut-over, or one fixed era (--era)', () => {
    const row = csvTradeRow();
    const ts = Number(row.timestamp);
    expect(expectFill(parseExportRow(row, { v2StartTs: ts + 1 })).fill.era).toBe('v1');
    expect(expectFill(parseExportRow(row, { v2StartTs: ts })).fill.era).toBe('v2');
    expect(expectFill(parseExportRow(row, { fixed: 'v1' })).fill.era).toBe('v1');
    const leg = parseExportRow(csvTradeRow({ type: 'REDEEM', usdcSize: '5', size: '5' }), { v2StartTs: ts + 1 });
    expect(leg.kind === 'leg' ? leg.leg.era : leg.kind).toBe('v1');
  });

  it('falls back to the pseudonym when the row has no name', () => {
    expect(expectFill(parseExportRow(csvTradeRow({ name: '' }), { fixed: 'v2' })).fill.name).toBe('Grown-Cantaloupe');
    expect(
      expectFill(parseExportRow(csvTradeRow({ name: '', pseudonym: '' }), { fixed: 'v2' })).fill.name,
    ).toBeUndefined();
  });

  it('gives the same row the same id whether it came from CSV or JSON', () => {
    const fromCsv = expectFill(parseExportRow(csvTradeRow(), { fixed: 'v2' }));
    const fromJson = expectFill(parseExportRow(jsonTradeRow(), { fixed: 'v2' }));
    expect(fromJson.fill).toEqual(fromCsv.fill);
    expect(fromJson.key).toBe(fromCsv.key);
  });

  it('gives the /trades copy of a fill (no type, no usdcSize) the same id, with usd = size × price', () => {
    const tradesRow = jsonTradeRow();
    delete tradesRow.type;
    delete tradesRow.usdcSize;
    const fromTrades = expectFill(parseExportRow(tradesRow, { fixed: 'v2' }));
    const fromActivity = expectFill(parseExportRow(jsonTradeRow(), { fixed: 'v2' }));
    expect(fromTrades.fill.usd).toBe(21.78);
    expect(fromTrades.fill.log_index).toBe(fromActivity.fill.log_index);
    expect(fromTrades.key).toBe(fromActivity.key);
  });

  it('rounds a computed usd to USDC precision', () => {
    const tradesRow: Record<string, unknown> = { ...jsonTradeRow(), size: 30974.624038, price: 0.968534758 };
    delete tradesRow.type;
    delete tradesRow.usdcSize;
    expect(expectFill(parseExportRow(tradesRow, { fixed: 'v2' })).fill.usd).toBe(29999.999997); // 29999.999996785…
  });

  it('tells apart the two sides of one match (same transaction, different wallets)', () => {
    const buyer = expectFill(parseExportRow(csvTradeRow(), { fixed: 'v2' }));
    const seller = expectFill(
      parseExportRow(csvTradeRow({ proxyWallet: OTHER_WALLET, side: 'SELL' }), { fixed: 'v2' }),
    );
    expect(seller.fill.tx_hash).toBe(buyer.fill.tx_hash);
    expect(seller.key).not.toBe(buyer.key);
    expect(seller.fill.log_index).not.toBe(buyer.fill.log_index);
  });

  it('tells apart two fills of one wallet in one transaction', () => {
    const up = expectFill(parseExportRow(csvTradeRow(), { fixed: 'v2' }));
    const down = expectFill(
      parseExportRow(csvTradeRow({ outcomeIndex: '1', outcome: 'Down', price: '0.01', usdcSize: '0.22' }), {
        fixed: 'v2',
      }),
    );
    expect(down.fill.log_index).not.toBe(up.fill.log_index);
  });

  it('ignores fields that do not identify the trade (name, title, datetime) in its identity', () => {
    const renamed = expectFill(
      parseExportRow(csvTradeRow({ name: 'renamed', title: 'x', datetime: '' }), { fixed: 'v2' }),
    );
    expect(renamed.key).toBe(expectFill(parseExportRow(csvTradeRow(), { fixed: 'v2' })).key);
  });
});

describe('parseExportRow: legs and other types', () => {
  it.each(['MERGE', 'REDEEM', 'SPLIT'] as const)(
    'maps a %s row to a position leg (tokens = size, usd = usdcSize)',
    (kind) => {
      const parsed = parseExportRow(
        csvTradeRow({
          type: kind,
          side: '',
          outcomeIndex: '999',
          outcome: '',
          asset: '',
          size: '3747.5512',
          usdcSize: '3747.5512',
          price: '0',
        }),
        { fixed: 'v2' },
      );
      if (parsed.kind !== 'leg') throw new Error(`expected a leg, got ${parsed.kind}`);
      expect(parsed.leg).toMatchObject({
        kind,
        tokens: 3747.5512,
        usd: 3747.5512,
        wallet: WALLET.toLowerCase(),
        condition_id: CONDITION,
        era: 'v2',
      });
      expect(parsed.market.outcome).toBeUndefined();
    },
  );

  it('rejects a REDEEM row whose payout per token names no side, with the reason', () => {
    const row = (size: string, usdcSize: string) =>
      parseExportRow(
        csvTradeRow({
          type: 'REDEEM',
          side: '',
          outcomeIndex: '999',
          outcome: '',
          asset: '',
          size,
          usdcSize,
          price: '0',
        }),
        { fixed: 'v2' },
      );
    // the losing side (nothing paid for the tokens) is a leg like the winner's
    expect(row('4.166664', '0')).toMatchObject({ kind: 'leg', leg: { kind: 'REDEEM', tokens: 4.166664, usd: 0 } });
    const rejected = row('10', '7');
    expect(rejected.kind).toBe('rejected');
    expect(rejected.kind === 'rejected' ? rejected.reason : '').toMatch(
      /^invalid positions event: usd: a redemption of 10 tokens for 7 USD pays 0\.700000 per token, not 0 \(the losing side\), 0\.5 \(a split payout\) or 1 \(the winner\)/,
    );
  });

  it.each(['REWARD', 'MAKER_REBATE', 'TAKER_REBATE', 'CONVERSION', 'YIELD'])('skips a %s row', (type) => {
    const parsed = parseExportRow(csvTradeRow({ type, conditionId: '', side: '', outcomeIndex: '999' }), {
      fixed: 'v2',
    });
    expect(parsed.kind).toBe('skipped');
  });
});

describe('parseExportRow: malformed rows are rejected with the schema reason', () => {
  it.each([
    ['a bad wallet', { proxyWallet: '0x1234' }, /wallet/],
    ['a missing conditionId on a TRADE', { conditionId: '' }, /condition_id/],
    ['a non-numeric price', { price: 'abc' }, /price/],
    ['an empty price (not 0)', { price: '' }, /price/],
    ['a hexadecimal price', { price: '0x1' }, /price/],
    ['a price above 1', { price: '1.5' }, /price/],
    ['a negative price', { price: '-0.1' }, /price/],
    ['a zero size', { size: '0' }, /size_tokens/],
    ['a price of 0 (tokens given away)', { price: '0' }, /price/],
    ['a size beyond the collateral there is', { size: '1e71', usdcSize: '1' }, /size_tokens/],
    ['a usdcSize beyond the collateral there is', { usdcSize: '1e40' }, /usd/],
    ['a bad transaction hash', { transactionHash: '0xabc' }, /tx_hash/],
    ['a timestamp in milliseconds', { timestamp: '1767556641000' }, /ts/],
    ['a side that is neither BUY nor SELL', { side: 'HOLD' }, /side/],
    ['outcomeIndex 999 on a TRADE', { outcomeIndex: '999' }, /outcomeIndex/],
    ['an empty type', { type: '' }, /type/],
  ] as const)('%s', (_label, overrides, pattern) => {
    expect(expectRejected(parseExportRow(csvTradeRow(overrides), { fixed: 'v2' }))).toMatch(pattern);
  });

  it('rejects a row that is not an object', () => {
    for (const row of [null, 42, 'text', [1, 2]]) expect(parseExportRow(row, { fixed: 'v2' }).kind).toBe('rejected');
  });

  it('reports the reason in the words of the contract', () => {
    expect(expectRejected(parseExportRow(csvTradeRow({ price: '1.5' }), { fixed: 'v2' }))).toMatch(
      /^invalid fills\.upstream event: price: /,
    );
  });
});

describe('numberOf', () => {
  it('reads decimals and refuses what Number() would quietly accept', () => {
    expect(numberOf('0.99')).toBe(0.99);
    expect(numberOf(' 22 ')).toBe(22);
    expect(numberOf('1e-3')).toBe(0.001);
    expect(numberOf(5)).toBe(5);
    for (const text of ['', ' ', '0x10', 'abc', '1,5', 'Infinity', null, undefined, true])
      expect(numberOf(text)).toBeNaN();
  });
});

describe('synthetic log index (property-based)', () => {
  it('is deterministic and a non-negative 31-bit integer', () => {
    fc.assert(
      fc.property(fc.string(), (identity) => {
        const index = syntheticLogIndex(identity);
        expect(Number.isInteger(index)).toBe(true);
        expect(index).toBeGreaterThanOrEqual(0);
        expect(index).toBeLessThanOrEqual(2 ** 31 - 1);
        expect(syntheticLogIndex(identity)).toBe(index);
        expect(TOPICS.fillsUpstream.schema.shape.log_index.safeParse(index).success).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  it('gives different identities different keys', () => {
    fc.assert(
      fc.property(fc.string(), fc.string(), (a, b) => {
        fc.pre(a !== b);
        expect(digestIdentity(a).key).not.toBe(digestIdentity(b).key);
      }),
    );
  });

  it('spreads over the whole range (no collisions among 20,000 fills of one transaction)', () => {
    const indexes = new Set<number>();
    for (let size = 1; size <= 20_000; size += 1)
      indexes.add(syntheticLogIndex(`fill|${WALLET}|${TX}|${CONDITION}|1|BUY|${size}|0.5|1767556641`));
    // 20,000 draws from 2^31 collide with probability ≈ 9%; this fixed set happens not to.
    expect(indexes.size).toBe(20_000);
  });
});

describe('trade seq (property-based)', () => {
  const logIndex = fc.integer({ min: 0, max: 2 ** 31 - 1 });
  // The lowest seq the archive gives a print: block 1, log 0 (block × SEQ_PER_BLOCK + log index).
  const lowestChainSeq = 1 * SEQ_PER_BLOCK;

  it('is a non-negative integer below every seq a print read from the chain has', () => {
    expect(tradeSeq(2 ** 31 - 1)).toBe(2 ** 16 - 1);
    fc.assert(
      fc.property(logIndex, (index) => {
        const seq = tradeSeq(index);
        expect(Number.isInteger(seq)).toBe(true);
        expect(seq).toBeGreaterThanOrEqual(0);
        expect(seq).toBeLessThan(lowestChainSeq);
      }),
    );
  });
});

describe('row parser robustness (property-based)', () => {
  const columns = [
    'timestamp',
    'type',
    'side',
    'proxyWallet',
    'conditionId',
    'outcomeIndex',
    'outcome',
    'size',
    'usdcSize',
    'price',
    'transactionHash',
    'title',
    'slug',
    'name',
  ];

  it('never throws on rows of arbitrary strings: it maps, skips or rejects', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom(...columns), fc.string()), (row) => {
        const parsed = parseExportRow(row, { fixed: 'v2' });
        expect(['fill', 'leg', 'skipped', 'rejected']).toContain(parsed.kind);
      }),
      { numRuns: 2000 },
    );
  });

  it('never throws when real rows get one field replaced by anything', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...columns),
        fc.anything(),
        fc.constantFrom('TRADE', 'MERGE', 'REWARD', undefined),
        (column, value, type) => {
          const row: Record<string, unknown> = { ...jsonTradeRow(), type, [column]: value };
          expect(['fill', 'leg', 'skipped', 'rejected']).toContain(parseExportRow(row, { fixed: 'v2' }).kind);
        },
      ),
      { numRuns: 2000 },
    );
  });

  it('every fill it maps from hostile amounts is inside the contract: price in (0, 1], bounded sizes', () => {
    const amount = fc.oneof(
      fc.double({ noNaN: false }),
      fc.constantFrom(0, -0, 1e-71, 1e71, Number.POSITIVE_INFINITY, Number.MAX_VALUE, Number.MIN_VALUE),
      fc.constantFrom('NaN', 'Infinity', '1e309', '0', '1e71', '-1'),
    );
    fc.assert(
      fc.property(amount, amount, amount, fc.constantFrom('TRADE', undefined), (size, price, usdcSize, type) => {
        const parsed = parseExportRow({ ...jsonTradeRow(), type, size, price, usdcSize }, { fixed: 'v2' });
        if (parsed.kind !== 'fill') return;
        for (const event of [parsed.fill, parsed.trade]) {
          expect(event.price).toBeGreaterThan(0);
          expect(event.price).toBeLessThanOrEqual(1);
          expect(event.size_tokens).toBeGreaterThan(0);
          expect(event.size_tokens).toBeLessThanOrEqual(MAX_AMOUNT);
          expect(event.usd).toBeLessThanOrEqual(MAX_AMOUNT);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('never throws on arbitrary JSONL lines', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.json()), (line) => {
        const parsed = parseJsonLine(line);
        if (parsed.ok)
          expect(['fill', 'leg', 'skipped', 'rejected']).toContain(parseExportRow(parsed.value, { fixed: 'v2' }).kind);
        else expect(parsed.reason).toMatch(/^invalid JSON/);
      }),
      { numRuns: 2000 },
    );
  });
});

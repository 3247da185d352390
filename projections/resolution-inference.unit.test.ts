import { describe, expect, it } from 'vitest';
import { inferResolutions, outcomeOfRedemptions, type RedemptionEvidence } from './resolution-inference.ts';

const MARKET = `0x${'ab'.repeat(32)}`;

function evidence(wallet: string, fields: Partial<RedemptionEvidence>): RedemptionEvidence {
  return {
    wallet,
    condition_id: MARKET,
    won_tokens: 0,
    lost_tokens: 0,
    split_tokens: 0,
    first_ts: 1000,
    held1: 0,
    held2: 0,
    ...fields,
  };
}

describe('what one wallet’s redemptions say', () => {
  it('tokens paid 1.00 each were the side that held them; tokens paid nothing, the other side won', () => {
    expect(outcomeOfRedemptions(evidence('a', { won_tokens: 10, held1: 10, held2: 4 })).outcome).toBe(1);
    expect(outcomeOfRedemptions(evidence('a', { won_tokens: 10, held1: 4, held2: 10 })).outcome).toBe(2);
    expect(outcomeOfRedemptions(evidence('a', { lost_tokens: 10, held1: 10 })).outcome).toBe(2);
    expect(outcomeOfRedemptions(evidence('a', { lost_tokens: 10, held2: 10 })).outcome).toBe(1);
  });

  it('an export that starts late: more redeemed than bought, but only one side ever held', () => {
    expect(outcomeOfRedemptions(evidence('a', { won_tokens: 500, held2: 20 })).outcome).toBe(2);
    // Both sides held, neither enough: no side can be told.
    expect(outcomeOfRedemptions(evidence('a', { won_tokens: 500, held1: 20, held2: 30 })).outcome).toBeNull();
    // Both sides held enough: either could have paid.
    expect(outcomeOfRedemptions(evidence('a', { won_tokens: 5, held1: 20, held2: 30 })).outcome).toBeNull();
  });

  it('0.50 per token is a split payout, unless both sides were held equally (a winner pays those the same)', () => {
    expect(outcomeOfRedemptions(evidence('a', { split_tokens: 10, held1: 10 })).outcome).toBe('split');
    expect(outcomeOfRedemptions(evidence('a', { split_tokens: 20, held1: 10, held2: 10 })).outcome).toBeNull();
  });

  it('a wallet whose winning and losing redemptions name the same side as winner and loser contradicts itself', () => {
    const said = outcomeOfRedemptions(evidence('a', { won_tokens: 10, lost_tokens: 5, held1: 10, held2: 0 }));
    // 10 of token 1 paid 1.00, 5 of token 1 paid nothing
    expect(said.outcome).toBeNull();
    expect(said.contradiction).toBe(
      "a's redemptions paid 1.00 per token of token 1 and nothing per token of token 1: both outcomes won",
    );
  });
});

describe('a market’s inference', () => {
  it('agreeing wallets resolve it at the first redemption; a wallet that says nothing does not count', () => {
    expect(
      inferResolutions(
        [
          evidence('a', { won_tokens: 10, held1: 10, first_ts: 300 }),
          evidence('b', { lost_tokens: 7, held2: 7, first_ts: 200 }),
          evidence('c', { split_tokens: 20, held1: 10, held2: 10, first_ts: 100 }),
        ],
        new Map(),
      ),
    ).toEqual([{ condition_id: MARKET, outcome: 1, ts: 200 }]);
  });

  it('a contradicting pair (both outcomes paid 1.00) resolves nothing and says why', () => {
    const rows = [evidence('a', { won_tokens: 10, held1: 10 }), evidence('b', { won_tokens: 10, held2: 10 })];
    expect(inferResolutions(rows, new Map())).toEqual([
      {
        condition_id: MARKET,
        contradiction:
          'redemptions contradict: a redeemed 10 of token 1 at 1.00 per token (token 1 won); b redeemed 10 of token 2 at 1.00 per token (token 2 won)',
        evidence: rows,
      },
    ]);
  });

  it('a split against a winner contradicts too', () => {
    const [inference] = inferResolutions(
      [evidence('a', { won_tokens: 10, held1: 10 }), evidence('b', { split_tokens: 4, held2: 4 })],
      new Map(),
    );
    expect(inference).toHaveProperty('contradiction');
  });

  it('against the resolution inferred earlier: agreement changes nothing, disagreement is a contradiction', () => {
    const row = evidence('a', { won_tokens: 10, held2: 10 });
    expect(inferResolutions([row], new Map([[MARKET, 2]]))).toEqual([]);
    expect(inferResolutions([row], new Map([[MARKET, 1]]))).toEqual([
      {
        condition_id: MARKET,
        contradiction:
          'redemptions contradict: a redeemed 10 of token 2 at 1.00 per token (token 2 won); the resolution inferred earlier says token 1 won',
        evidence: [row],
      },
    ]);
  });
});

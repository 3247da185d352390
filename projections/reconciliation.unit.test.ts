import { describe, expect, it } from 'vitest';
import { reconcile, type ReconciliationInputs } from './reconciliation.ts';

const V2_START = 1_777_374_900;
const AS_OF = 1_786_200_000;

type Overrides = Partial<Omit<ReconciliationInputs, 'career'>> & { career?: Partial<ReconciliationInputs['career']> };

function inputs(overrides: Overrides = {}): ReconciliationInputs {
  const { career, ...rest } = overrides;
  return {
    provider: { pnl: 1_000, as_of: AS_OF },
    providerPoints: [[V2_START + 86_400, 100]],
    eras: ['v2'],
    v2StartTs: V2_START,
    ...rest,
    career: {
      pnl_marked_usd: 1_000,
      markets_total: 12,
      open_markets: 0,
      unmarked_markets: 0,
      last_seen: AS_OF - 600,
      ...career,
    },
  };
}

describe('reconciliation with the provider', () => {
  it('agrees within a cent: gap 0, nothing to explain', () => {
    expect(reconcile(inputs({ career: { pnl_marked_usd: 999.995, open_markets: 3 } }))).toEqual({
      provider_pnl_usd: 1_000,
      pnl_usd: 999.995,
      gap_usd: expect.closeTo(0.005, 9),
      gap_ratio: expect.closeTo(0.000005, 12),
      compared_eras: ['v2'],
      explained: [],
    });
  });

  it('a V1 history not counted: the provider’s curve begins before the cut-over, only V2 compared', () => {
    // The provider says 1,000; the V2 era here made 250: 750 apart, three quarters of the provider's figure.
    const answer = reconcile(inputs({ providerPoints: [[V2_START - 86_400, 40]], career: { pnl_marked_usd: 250 } }));
    expect(answer).toMatchObject({ gap_usd: 750, gap_ratio: 0.75, explained: ['era_not_counted'] });
    // With V1 counted the same history is compared whole: nothing of it is missing.
    expect(
      reconcile(
        inputs({ providerPoints: [[V2_START - 86_400, 40]], eras: ['v1', 'v2'], career: { pnl_marked_usd: 250 } }),
      ).explained,
    ).toEqual([]);
  });

  it('names open holdings (marked and not), activity after the provider’s figures, a wallet not indexed', () => {
    const answer = reconcile(
      inputs({
        provider: { pnl: -400, as_of: AS_OF },
        career: { pnl_marked_usd: -380, open_markets: 3, unmarked_markets: 1, last_seen: AS_OF + 60 },
      }),
    );
    expect(answer).toMatchObject({
      gap_usd: -20,
      gap_ratio: 0.05,
      explained: ['open_positions_marked', 'unmarked_positions', 'activity_after_provider'],
    });
    expect(reconcile(inputs({ career: { pnl_marked_usd: 0, markets_total: 0, last_seen: 0 } }))).toMatchObject({
      gap_usd: 1_000,
      gap_ratio: 1,
      explained: ['not_indexed'],
    });
  });

  it('has no ratio when the provider states 0', () => {
    expect(reconcile(inputs({ provider: { pnl: 0, as_of: AS_OF }, career: { pnl_marked_usd: 12 } }))).toMatchObject({
      gap_usd: -12,
      gap_ratio: null,
    });
  });
});

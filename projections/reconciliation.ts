/**
 * How far this service's profit is from the provider's, for a wallet the provider reports on, and what is
 * known to account for the gap (docs/upstream.md, "Agreement with the provider"). The card quotes the
 * provider's figure (`upstream.pnl`); this block lets a user see, without hand work, whether the two agree.
 */
import { z } from 'zod';
import type { EquityPoint } from './upstream-history.ts';
import type { CardEra } from './coverage.ts';

/** What is known to make the two figures differ; each is a fact read from the two sources, not a guess. */
const GAP_EXPLANATIONS = [
  'era_not_counted',
  'open_positions_marked',
  'unmarked_positions',
  'activity_after_provider',
  'not_indexed',
] as const;
type GapExplanation = (typeof GAP_EXPLANATIONS)[number];

/** A gap below a cent is agreement: nothing to explain. */
const AGREEMENT_USD = 0.01;

export const reconciliationSchema = z
  .object({
    provider_pnl_usd: z.number().meta({ description: "The provider's profit (upstream.pnl), as of upstream.as_of." }),
    pnl_usd: z.number().meta({
      description:
        "This service's profit over compared_eras: resolved markets' results plus open holdings at each market's last trade (the card's fallback pnl_marked_usd).",
    }),
    gap_usd: z.number().meta({ description: 'provider_pnl_usd − pnl_usd.' }),
    gap_ratio: z
      .number()
      .min(0)
      .nullable()
      .meta({ description: '|gap_usd| ÷ |provider_pnl_usd|; null when the provider states 0.' }),
    compared_eras: z
      .array(z.enum(['v1', 'v2']))
      .meta({ description: 'The exchange eras pnl_usd counts (card.coverage.eras); the provider counts all.' }),
    explained: z.array(z.enum(GAP_EXPLANATIONS)).meta({
      description:
        "What is known to account for the gap (empty when the two agree within a cent, or when nothing known does): era_not_counted, the provider's history reaches before the eras compared; open_positions_marked, open holdings are marked at the last trade here and at the provider's price there; unmarked_positions, open holdings without a trade count 0 here; activity_after_provider, the wallet traded after the provider's figures; not_indexed, this service holds none of the wallet's markets.",
    }),
  })
  .meta({
    description:
      "Agreement with the provider (present when the provider reports on the wallet): the gap between its profit and this service's, and what is known to explain it. Quote upstream.pnl; this says how far to trust a comparison with the card's other figures.",
  });
export type Reconciliation = z.infer<typeof reconciliationSchema>;

export interface ReconciliationInputs {
  provider: { pnl: number; as_of: number };
  /** The provider's equity history, in time order: where it begins. */
  providerPoints: readonly EquityPoint[];
  /** This service's figures over the eras compared. */
  career: {
    pnl_marked_usd: number;
    markets_total: number;
    open_markets: number;
    unmarked_markets: number;
    last_seen: number;
  };
  eras: readonly CardEra[];
  v2StartTs: number;
}

export function reconcile(inputs: ReconciliationInputs): Reconciliation {
  const { provider, career } = inputs;
  const gap = provider.pnl - career.pnl_marked_usd;
  const explained: GapExplanation[] = [];
  if (Math.abs(gap) >= AGREEMENT_USD) {
    const historyStart = inputs.providerPoints[0]?.[0];
    if (!inputs.eras.includes('v1') && historyStart !== undefined && historyStart < inputs.v2StartTs)
      explained.push('era_not_counted');
    if (career.open_markets > career.unmarked_markets) explained.push('open_positions_marked');
    if (career.unmarked_markets > 0) explained.push('unmarked_positions');
    if (career.last_seen > provider.as_of) explained.push('activity_after_provider');
    if (career.markets_total === 0) explained.push('not_indexed');
  }
  return {
    provider_pnl_usd: provider.pnl,
    pnl_usd: career.pnl_marked_usd,
    gap_usd: gap,
    gap_ratio: provider.pnl === 0 ? null : Math.abs(gap) / Math.abs(provider.pnl),
    compared_eras: [...inputs.eras],
    explained,
  };
}

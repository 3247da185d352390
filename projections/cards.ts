/**
 * The trader card: the archive's career statistics blended with the upstream provider's own figures.
 * The card never fails because of the upstream: when it is offline, or has never reported on the wallet,
 * the `upstream` block says so and only then does the card carry the archive's own profit figures
 * (`career_pnl_usd`, `pnl_marked_usd`). No figure is served that no source stated.
 */
import { z } from 'zod';
import { careerCardSchema, readCareer, type CareerCard } from './careers.ts';
import { coverageOf, v1Indexed } from './coverage.ts';
import { readUpstreamState } from './equity.ts';
import { plainSources, type ReadSources } from './sources.ts';
import type { Store } from './store.ts';
import { traderSchema, type Trader } from './traders.ts';
import { reconcile, reconciliationSchema } from './reconciliation.ts';
import { upstreamProfileOf, upstreamProfileSchema } from './upstream.ts';

const upstreamOfflineBlock = z.object({ status: z.literal('upstream_offline') }).meta({
  description:
    'The upstream provider is unreachable, or has never reported on this wallet (its figures are unknown, not zero); the card falls back to the archive figures career_pnl_usd and pnl_marked_usd.',
});

export const traderCardSchema = z.object({
  trader: traderSchema,
  card: careerCardSchema,
  upstream: z.union([upstreamProfileSchema, upstreamOfflineBlock]),
  reconciliation: reconciliationSchema.optional(),
});
export type TraderCard = z.infer<typeof traderCardSchema>;

export interface CardSettings {
  /** The operator's word that the V1 era is in (imports); otherwise the archive's checkpoints tell. */
  includeV1: boolean;
  upstreamStaleAfterSeconds: number;
  /** The V1 → V2 cut-over (epoch seconds) and the block where the V1 era's logs begin: facts of the chain. */
  v2StartTs: number;
  v1FirstBlock: number;
}

/**
 * The card's parts: the career's and the upstream profile's plain reads by the wallet prefix of their
 * keys, as two bundles (projections/bundle.ts) side by side on the read pool, folded here; the upstream's
 * state comes from its own point read (or the API's cache of it), alongside. Two statements
 * in parallel answer sooner than the same parts as one, for a little less throughput under load: the
 * card is the call agents wait on first. The career waits for the archive's ranges (which eras it
 * counts), a small read the API keeps; with the operator's override there is nothing to read.
 */
export async function readTraderCard(
  store: Store,
  trader: Trader | { wallet: string; name: Promise<string> },
  settings: CardSettings,
  nowSeconds: number,
  sources: ReadSources = plainSources(store),
): Promise<TraderCard> {
  const indexed = settings.includeV1
    ? Promise.resolve(false)
    : sources.archiveRanges().then((ranges) => v1Indexed(ranges, settings.v1FirstBlock, settings.v2StartTs));
  const coverage = indexed.then((v1) => coverageOf(settings.includeV1, v1, settings.v2StartTs));
  const [career, covered, history, upstreamState, name] = await Promise.all([
    coverage.then((covers) => readCareer(store, trader.wallet, covers.eras.includes('v1'), sources)),
    coverage,
    sources.upstreamHistory(trader.wallet),
    readUpstreamState(store, nowSeconds, settings.upstreamStaleAfterSeconds, sources),
    // A name still being read (the call's, started at its admission) is awaited beside the card's reads.
    trader.name,
  ]);
  const named: Trader = { wallet: trader.wallet, name };
  const profile = upstreamProfileOf(history);
  const { career_pnl_usd, pnl_marked_usd, fills_count: _fills, ...figures } = career;
  const statistics = { ...figures, coverage: covered };
  // A wallet the provider never reported on has no upstream figures: zeros would read as a real account
  // that made nothing, so it answers as when the provider cannot answer (docs/decisions.md).
  if (upstreamState.state === 'offline' || profile === null) {
    const card: CareerCard = { ...statistics, career_pnl_usd, pnl_marked_usd };
    return { trader: named, card, upstream: { status: 'upstream_offline' } };
  }
  const reconciliation = reconcile({
    provider: profile,
    providerPoints: history.points,
    career: { ...figures, pnl_marked_usd },
    eras: covered.eras,
    v2StartTs: settings.v2StartTs,
  });
  return { trader: named, card: statistics, upstream: profile, reconciliation };
}

/**
 * Is a trader good, or lucky? The skill answer over the trader's resolved markets: edge (the realized return
 * above what the entry prices implied), calibration (the Brier score of the entry prices as forecasts of the
 * outcomes bought, with its decomposition and a table by price bucket), an interval and a shrunk edge that
 * weigh the evidence, and the trader's percentile among wallets with enough resolved markets. Every formula,
 * with a worked example: docs/skill.md.
 *
 * Today's reads are the skill rollup's rows (trader_skill_markets, migration 0020: per wallet and resolved market
 * with a buy, its pnl as trader_markets_v2 counts it, so a loser never sold nor redeemed is a loss, its cost, and its
 * buys' calibration sums by price bucket), kept current by the rollup refresher: a trader's answer reads its rows,
 * the prior and the leaderboard sum every wallet's. As of a past instant the trader's markets are the rollup's
 * formulas over the events up to it (projections/as-of.ts) and its buys up to it, folded into the same sums here.
 */
import { bundle, readBundle } from './bundle.ts';
import { compareIds } from './market-parts.ts';
import { benjaminiHochberg, luckProbability, SKILL_FALSE_DISCOVERY_RATE } from './luck.ts';
import { mulberry32 } from './random.ts';
import type { Store } from './store.ts';
import type { WalletMarketRow } from './wallet-markets.ts';

/** Resolved markets a wallet needs (with a bought entry) to be ranked and to inform the population's prior. */
export const SKILL_MIN_MARKETS = 20;
/** Bootstrap resamples of the trader's markets for the edge's 90% interval. */
export const SKILL_BOOTSTRAP_SAMPLES = 1_000;
/** Price buckets of the calibration table: [0, 0.1), [0.1, 0.2), …, [0.9, 1]. */
const BUCKETS = 10;
/** Holdings below this many tokens are none (6-decimal amounts and float sums). */
const HELD_EPSILON = 1e-6;
/**
 * The prior's spread of edges across traders when the population cannot estimate it (fewer than two ranked
 * wallets, or edges that spread no more than their own noise): an edge of ±10% per dollar is already rare.
 */
const SKILL_DEFAULT_PRIOR_SD = 0.1;

/**
 * A market's buys as forecasts, by price bucket (BUCKETS of them; index b holds prices in [b/10, (b+1)/10), the
 * last also 1): buys, tokens, Σ tokens × price, Σ tokens × what the outcome bought paid per token; and
 * `squared`, Σ tokens × (price − payout)² over all of them.
 */
interface CalibrationSums {
  squared: number;
  buys: number[];
  tokens: number[];
  price_tokens: number[];
  payout_tokens: number[];
}

/** One resolved market of the trader, as the skill answer weighs it. */
export interface SkillMarket {
  condition_id: string;
  /** The result, net of fees, holdings at what they paid. */
  pnl_usd: number;
  /** Dollars paid for entries (bought notional). */
  cost_usd: number;
  tokens_bought: number;
  /** Tokens were still held when it resolved (redeemed, or never sold nor redeemed). */
  held_to_resolution: boolean;
  resolved_ts: number;
  calibration: CalibrationSums;
}

/** One buy: a forecast (the price paid) of the outcome it bought, and what that outcome paid per token. */
interface SkillBuy {
  price: number;
  tokens: number;
  payout: number;
}

const bucketOf = (price: number) => Math.min(BUCKETS - 1, Math.floor(price * BUCKETS));

/** The calibration sums of some buys (as the skill rollup sums them in SQL). */
function calibrationSumsOf(buys: readonly SkillBuy[]): CalibrationSums {
  const zeros = () => new Array<number>(BUCKETS).fill(0);
  const sums: CalibrationSums = {
    squared: 0,
    buys: zeros(),
    tokens: zeros(),
    price_tokens: zeros(),
    payout_tokens: zeros(),
  };
  for (const buy of buys) {
    const bucket = bucketOf(buy.price);
    sums.buys[bucket]! += 1;
    sums.tokens[bucket]! += buy.tokens;
    sums.price_tokens[bucket]! += buy.tokens * buy.price;
    sums.payout_tokens[bucket]! += buy.tokens * buy.payout;
    sums.squared += buy.tokens * (buy.price - buy.payout) ** 2;
  }
  return sums;
}

/** The buys and resolution times (up to `as_of`) of an as-of sample, in one statement; the sample is the as-of rows. */
const SKILL_BUYS = bundle<{
  buys: { condition_id: string; price: number; tokens: number; token_side: number };
  resolutions: { condition_id: string; ts: number };
}>({
  buys: `
    SELECT condition_id, usd / size_tokens AS price, size_tokens AS tokens, token_side
    FROM
    (
        SELECT condition_id, token_side, size_tokens, usd
        FROM {db:Identifier}.fills_v2
        WHERE wallet = {wallet:String} AND side = 'BUY' AND ts <= {as_of:UInt32}
        ORDER BY source_rank DESC
        LIMIT 1 BY wallet, condition_id, fill_id
    )`,
  resolutions: `
    SELECT condition_id, ts
    FROM {db:Identifier}.market_resolutions_v2
    WHERE ts <= {as_of:UInt32}
      AND condition_id IN (SELECT condition_id FROM {db:Identifier}.trader_markets_v2 WHERE wallet = {wallet:String})
    ORDER BY inferred, ts DESC
    LIMIT 1 BY condition_id`,
});

/** What the skill answer weighs: the sample's markets, each with its buys' calibration sums. */
export interface SkillInputs {
  markets: SkillMarket[];
}

/** A row of trader_skill_markets as SKILL_MARKETS reads it: a SkillMarket with its calibration sums apart. */
type SkillMarketRow = Omit<SkillMarket, 'calibration'> & {
  squared: number;
  bucket_buys: number[];
  bucket_tokens: number[];
  bucket_price_tokens: number[];
  bucket_payout_tokens: number[];
};

const SKILL_MARKETS = `
SELECT condition_id, pnl_usd, cost_usd, tokens_bought, held_to_resolution, resolved_ts, squared,
       bucket_buys, bucket_tokens, bucket_price_tokens, bucket_payout_tokens
FROM {db:Identifier}.trader_skill_markets
WHERE wallet = {wallet:String}
ORDER BY version DESC
LIMIT 1 BY condition_id`;

/** Today's sample of a wallet: its rows of the skill rollup (its resolved markets with a bought entry). */
export async function readSkillMarkets(store: Store, wallet: string): Promise<SkillInputs> {
  const rows = await store.query<SkillMarketRow>(SKILL_MARKETS, { wallet });
  const markets = rows
    .map(({ squared, bucket_buys, bucket_tokens, bucket_price_tokens, bucket_payout_tokens, ...row }) => ({
      ...row,
      held_to_resolution: Boolean(row.held_to_resolution),
      calibration: {
        squared,
        buys: bucket_buys,
        tokens: bucket_tokens,
        price_tokens: bucket_price_tokens,
        payout_tokens: bucket_payout_tokens,
      },
    }))
    .sort((a, b) => compareIds(a.condition_id, b.condition_id));
  return { markets };
}

/**
 * The trader's resolved markets with a bought entry among `rows` (the wallet's market rows as of `asOf`), with
 * the buys in them up to `asOf` folded into their calibration sums: the skill rollup's rows as they were then.
 * A market was held to its resolution when tokens were redeemed or are still held.
 */
export async function readSkillInputsAsOf(
  store: Store,
  wallet: string,
  rows: readonly WalletMarketRow[],
  asOf: number,
): Promise<SkillInputs> {
  const sample = rows
    .filter((row) => row.resolved && row.buy_usd > 0 && row.up_payout !== null)
    .sort((a, b) => compareIds(a.condition_id, b.condition_id));
  if (sample.length === 0) return { markets: [] };
  const parts = await readBundle(store, SKILL_BUYS, { wallet, as_of: asOf });
  const resolvedAt = new Map(parts.resolutions.map((row) => [row.condition_id, row.ts]));
  const upPayout = new Map(sample.map((row) => [row.condition_id, row.up_payout!]));
  const buysOf = new Map<string, SkillBuy[]>(sample.map((row) => [row.condition_id, []]));
  for (const buy of parts.buys) {
    const up = upPayout.get(buy.condition_id);
    if (up === undefined) continue;
    buysOf.get(buy.condition_id)!.push({
      price: buy.price,
      tokens: buy.tokens,
      payout: buy.token_side === 1 ? up : 1 - up,
    });
  }
  const markets = sample.map((row) => ({
    condition_id: row.condition_id,
    pnl_usd: row.pnl_usd,
    cost_usd: row.buy_usd,
    tokens_bought: row.buy_tokens,
    held_to_resolution:
      (row.redeem_tokens ?? 0) > HELD_EPSILON || Math.abs(row.net_tokens1) + Math.abs(row.net_tokens2) > HELD_EPSILON,
    resolved_ts: resolvedAt.get(row.condition_id) ?? 0,
    calibration: calibrationSumsOf(buysOf.get(row.condition_id)!),
  }));
  return { markets };
}

/** One ranked wallet's sums over its resolved markets with a bought entry (edge = pnl ÷ cost). */
export interface WalletSkillSums {
  wallet: string;
  markets: number;
  pnl: number;
  cost: number;
  pnl_sq: number;
  cost_sq: number;
  pnl_cost: number;
  /** Tokens bought and Σ tokens × (price − payout)² over the buys: the Brier score is their ratio. */
  brier_tokens: number;
  brier_squared: number;
  /** Per market, the tokens bought and Σ tokens × price paid: the bets of the luck test (projections/luck.ts). */
  bet_tokens: number[];
  bet_price_tokens: number[];
  /** What the bought tokens paid above their price, over the markets. */
  excess_usd: number;
}

/** The latest instant the store holds: a population of today is as of it. */
const LAST_SECOND = 4_294_967_295;

/**
 * The ranked wallets' sums over the skill rollup's rows of markets resolved since `{since}` and known by
 * `{as_of}` (each pair's newest row first, then the window: a row a later fill moved is judged as it is now).
 */
const SKILL_POPULATION = `
SELECT wallet, toUInt32(count()) AS markets, sum(pnl_usd) AS pnl, sum(cost_usd) AS cost,
       sum(pnl_usd * pnl_usd) AS pnl_sq, sum(cost_usd * cost_usd) AS cost_sq, sum(pnl_usd * cost_usd) AS pnl_cost,
       sum(arraySum(bucket_tokens)) AS brier_tokens, sum(squared) AS brier_squared,
       groupArray(arraySum(bucket_tokens)) AS bet_tokens, groupArray(arraySum(bucket_price_tokens)) AS bet_price_tokens,
       sum(arraySum(bucket_payout_tokens)) - sum(arraySum(bucket_price_tokens)) AS excess_usd
FROM
(
    SELECT wallet, condition_id, resolved_ts, known_ts, pnl_usd, cost_usd, bucket_tokens, bucket_price_tokens,
           bucket_payout_tokens, squared
    FROM {db:Identifier}.trader_skill_markets
    ORDER BY version DESC
    LIMIT 1 BY wallet, condition_id
)
WHERE resolved_ts >= {since:UInt32} AND known_ts <= {as_of:UInt32}
GROUP BY wallet
HAVING markets >= {min:UInt32}`;

/**
 * Every wallet with at least SKILL_MIN_MARKETS resolved markets with a bought entry: of markets resolved since
 * `since` (epoch s; 0: all), as known at `asOf` (absent: today).
 */
export async function readSkillPopulation(
  store: Store,
  scope: { since?: number; asOf?: number | undefined } = {},
): Promise<WalletSkillSums[]> {
  return store.query<WalletSkillSums>(SKILL_POPULATION, {
    min: SKILL_MIN_MARKETS,
    since: scope.since ?? 0,
    as_of: scope.asOf ?? LAST_SECOND,
  });
}

/** One row of the skill leaderboard. */
export interface SkilledTrader {
  wallet: string;
  markets: number;
  cost_usd: number;
  pnl_usd: number;
  edge: number;
  edge_shrunk: number;
  brier: number | null;
  luck_probability: number;
  q_value: number;
  distinguishable_from_luck: boolean;
}

/** The ranked wallets of a window with their figures, and the window's prior. */
export interface SkillBoard {
  traders: SkilledTrader[];
  priorSd: number;
}

/** The leaderboard's rows (unordered) from a window's population. */
export function skillBoardOf(population: readonly WalletSkillSums[]): SkillBoard {
  const prior = priorOf(population);
  const ranked = population.filter((sums) => sums.cost > 0);
  const luck = ranked.map((sums) =>
    luckProbability(
      sums.bet_tokens.map((tokens, index) => ({ tokens, price: (sums.bet_price_tokens[index] ?? 0) / tokens })),
      sums.excess_usd,
    ),
  );
  // Corrected over the whole population the window ranks (as of its instant), whatever order is asked.
  const qValues = benjaminiHochberg(luck);
  const traders = ranked.map((sums, index) => {
    const { edge, variance } = edgeOfSums(sums);
    return {
      wallet: sums.wallet,
      markets: sums.markets,
      cost_usd: sums.cost,
      pnl_usd: sums.pnl,
      edge,
      edge_shrunk: shrink(edge, variance, prior.priorVariance),
      brier: sums.brier_tokens > 0 ? sums.brier_squared / sums.brier_tokens : null,
      luck_probability: luck[index]!,
      q_value: qValues[index]!,
      distinguishable_from_luck: qValues[index]! <= SKILL_FALSE_DISCOVERY_RATE,
    };
  });
  return { traders, priorSd: Math.sqrt(prior.priorVariance) };
}

/** The ratio edge Σpnl ÷ Σcost and its sampling variance (delta method over markets). */
function edgeOfSums(sums: Pick<WalletSkillSums, 'pnl' | 'cost' | 'pnl_sq' | 'cost_sq' | 'pnl_cost'>): {
  edge: number;
  variance: number;
} {
  const edge = sums.pnl / sums.cost;
  // Σ (pnl_m − edge · cost_m)² ÷ (Σ cost_m)², expanded into the sums.
  const residual = sums.pnl_sq - 2 * edge * sums.pnl_cost + edge * edge * sums.cost_sq;
  return { edge, variance: Math.max(0, residual) / (sums.cost * sums.cost) };
}

/** The prior of the empirical Bayes shrinkage: edges across ranked wallets ~ N(0, τ²), τ² by moments. */
export interface SkillPrior {
  priorVariance: number;
  /** Ranked wallets' shrunk edges, ascending: the percentile's reference. */
  shrunkEdges: number[];
  wallets: number;
}

export function priorOf(population: readonly WalletSkillSums[]): SkillPrior {
  const fitted = population.filter((sums) => sums.cost > 0).map(edgeOfSums);
  let priorVariance = SKILL_DEFAULT_PRIOR_SD ** 2;
  if (fitted.length >= 2) {
    const meanSquare = fitted.reduce((sum, wallet) => sum + wallet.edge * wallet.edge, 0) / fitted.length;
    const noise = fitted.reduce((sum, wallet) => sum + wallet.variance, 0) / fitted.length;
    // What the edges spread beyond their own sampling noise (around 0: the market's price is its forecast);
    // a population whose edges spread no more than their noise says nothing yet: the default prior stays.
    if (meanSquare > noise) priorVariance = meanSquare - noise;
  }
  const shrunkEdges = fitted.map((wallet) => shrink(wallet.edge, wallet.variance, priorVariance)).sort((a, b) => a - b);
  return { priorVariance, shrunkEdges, wallets: fitted.length };
}

/** The posterior mean of a normal edge with a N(0, τ²) prior: the evidence's weight τ² ÷ (τ² + s²). */
function shrink(edge: number, variance: number, priorVariance: number): number {
  if (priorVariance + variance === 0) return 0;
  return (edge * priorVariance) / (priorVariance + variance);
}

/** A stable seed of a wallet (FNV-1a): the same trader gets the same bootstrap. */
function seedOf(wallet: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < wallet.length; index++) {
    hash ^= wallet.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}

/** The 90% bootstrap interval of Σpnl ÷ Σcost over the markets (resampled with replacement); null below two markets. */
function bootstrapInterval(
  markets: readonly Pick<SkillMarket, 'pnl_usd' | 'cost_usd'>[],
  seed: number,
  samples = SKILL_BOOTSTRAP_SAMPLES,
): [number, number] | null {
  if (markets.length < 2) return null;
  const random = mulberry32(seed);
  const edges = new Float64Array(samples);
  for (let sample = 0; sample < samples; sample++) {
    let pnl = 0;
    let cost = 0;
    for (let draw = 0; draw < markets.length; draw++) {
      const market = markets[Math.floor(random() * markets.length)]!;
      pnl += market.pnl_usd;
      cost += market.cost_usd;
    }
    edges[sample] = pnl / cost;
  }
  edges.sort();
  // Nearest-rank percentiles, as elsewhere in the service.
  const rank = (p: number) => edges[Math.min(samples - 1, Math.max(0, Math.ceil(p * samples) - 1))]!;
  return [rank(0.05), rank(0.95)];
}

interface CalibrationBucket {
  from: number;
  to: number;
  buys: number;
  tokens: number;
  /** Token-weighted mean price paid (the forecast). */
  mean_price: number;
  /** Token-weighted mean of what the outcomes bought paid per token (0, 1, or a split's share). */
  outcome_rate: number;
}

interface Calibration {
  /** Token-weighted mean of (price − outcome)²: 0 is a perfect forecaster, 0.25 a coin at 0.5. */
  brier: number;
  reliability: number;
  resolution: number;
  uncertainty: number;
  table: CalibrationBucket[];
}

/** The Brier score of the markets' buys' prices as forecasts of their outcomes, token-weighted, and Murphy's decomposition by bucket. */
function calibrationOf(markets: readonly SkillMarket[]): Calibration | null {
  const total = (pick: (sums: CalibrationSums) => number) =>
    markets.reduce((sum, market) => sum + pick(market.calibration), 0);
  const inBucket = (bucket: number, pick: (sums: CalibrationSums) => number[]) =>
    total((sums) => pick(sums)[bucket] ?? 0);
  const bucketTokens = Array.from({ length: BUCKETS }, (_, bucket) => inBucket(bucket, (sums) => sums.tokens));
  const weight = bucketTokens.reduce((sum, tokens) => sum + tokens, 0);
  if (!(weight > 0)) return null;
  const brier = total((sums) => sums.squared) / weight;
  const base =
    Array.from({ length: BUCKETS }, (_, bucket) => inBucket(bucket, (sums) => sums.payout_tokens)).reduce(
      (sum, value) => sum + value,
      0,
    ) / weight;
  const table: CalibrationBucket[] = [];
  let reliability = 0;
  let resolution = 0;
  for (let bucket = 0; bucket < BUCKETS; bucket++) {
    const tokens = bucketTokens[bucket]!;
    if (!(tokens > 0)) continue;
    const meanPrice = inBucket(bucket, (sums) => sums.price_tokens) / tokens;
    const outcomeRate = inBucket(bucket, (sums) => sums.payout_tokens) / tokens;
    reliability += (tokens * (meanPrice - outcomeRate) ** 2) / weight;
    resolution += (tokens * (outcomeRate - base) ** 2) / weight;
    table.push({
      from: bucket / BUCKETS,
      to: (bucket + 1) / BUCKETS,
      buys: inBucket(bucket, (sums) => sums.buys),
      tokens,
      mean_price: meanPrice,
      outcome_rate: outcomeRate,
    });
  }
  return { brier, reliability, resolution, uncertainty: base * (1 - base), table };
}

interface SampleEdge {
  markets: number;
  pnl_usd: number;
  cost_usd: number;
  /** Σ pnl ÷ Σ cost; null without cost. */
  edge: number | null;
}

const sampleOf = (markets: readonly SkillMarket[]): SampleEdge => {
  const pnl = markets.reduce((sum, market) => sum + market.pnl_usd, 0);
  const cost = markets.reduce((sum, market) => sum + market.cost_usd, 0);
  return { markets: markets.length, pnl_usd: pnl, cost_usd: cost, edge: cost > 0 ? pnl / cost : null };
};

export interface TraderSkill {
  sample: {
    markets: number;
    cost_usd: number;
    tokens_bought: number;
    first_resolved_ts: number | null;
    last_resolved_ts: number | null;
  };
  edge: {
    per_dollar: number | null;
    per_token: number | null;
    interval_90: [number, number] | null;
    shrunk: number | null;
    standard_error: number | null;
    luck_probability: number | null;
  };
  held_to_resolution: SampleEdge;
  sold_before_resolution: SampleEdge;
  calibration: Calibration | null;
  rank: {
    /** Share of ranked wallets whose shrunk edge is below this one's; null below SKILL_MIN_MARKETS markets. */
    percentile: number | null;
    ranked_wallets: number;
    min_markets: number;
    prior_sd: number;
  };
}

/**
 * The share of `edges` below `edge`. Edges within a rounding of it are not below: the trader's own edge is among
 * them, summed in another order (the population's sums in the store, the trader's here).
 */
function belowShare(edges: readonly number[], edge: number): number {
  const tie = 1e-9 * Math.max(1, Math.abs(edge));
  return edges.filter((other) => other < edge - tie).length / edges.length;
}

/** The luck test of the markets' buys (projections/luck.ts); null without buys. */
function luckOf(markets: readonly SkillMarket[]): number | null {
  const sum = (values: readonly number[]) => values.reduce((total, value) => total + value, 0);
  const bets = markets.map(({ calibration }) => {
    const tokens = sum(calibration.tokens);
    return { tokens, price: tokens > 0 ? sum(calibration.price_tokens) / tokens : 0 };
  });
  if (!bets.some((bet) => bet.tokens > 0)) return null;
  const excess = sum(markets.map(({ calibration }) => sum(calibration.payout_tokens) - sum(calibration.price_tokens)));
  return luckProbability(bets, excess);
}

/** The skill answer from the trader's inputs and the population's prior. */
export function skillOf(wallet: string, inputs: { markets: readonly SkillMarket[] }, prior: SkillPrior): TraderSkill {
  const { markets } = inputs;
  const all = sampleOf(markets);
  const tokens = markets.reduce((sum, market) => sum + market.tokens_bought, 0);
  const resolvedTimes = markets.map((market) => market.resolved_ts).filter((ts) => ts > 0);
  let variance: number | null = null;
  let shrunk: number | null = null;
  if (all.edge !== null) {
    const sums = markets.reduce(
      (acc, market) => ({
        pnl: acc.pnl + market.pnl_usd,
        cost: acc.cost + market.cost_usd,
        pnl_sq: acc.pnl_sq + market.pnl_usd ** 2,
        cost_sq: acc.cost_sq + market.cost_usd ** 2,
        pnl_cost: acc.pnl_cost + market.pnl_usd * market.cost_usd,
      }),
      { pnl: 0, cost: 0, pnl_sq: 0, cost_sq: 0, pnl_cost: 0 },
    );
    variance = edgeOfSums(sums).variance;
    shrunk = shrink(all.edge, variance, prior.priorVariance);
  }
  const ranked = markets.length >= SKILL_MIN_MARKETS && shrunk !== null && prior.shrunkEdges.length > 0;
  return {
    sample: {
      markets: markets.length,
      cost_usd: all.cost_usd,
      tokens_bought: tokens,
      first_resolved_ts: resolvedTimes.length > 0 ? Math.min(...resolvedTimes) : null,
      last_resolved_ts: resolvedTimes.length > 0 ? Math.max(...resolvedTimes) : null,
    },
    edge: {
      per_dollar: all.edge,
      per_token: tokens > 0 ? all.pnl_usd / tokens : null,
      interval_90: bootstrapInterval(markets, seedOf(wallet)),
      shrunk,
      standard_error: variance === null ? null : Math.sqrt(variance),
      luck_probability: luckOf(markets),
    },
    held_to_resolution: sampleOf(markets.filter((market) => market.held_to_resolution)),
    sold_before_resolution: sampleOf(markets.filter((market) => !market.held_to_resolution)),
    calibration: calibrationOf(markets),
    rank: {
      percentile: ranked ? belowShare(prior.shrunkEdges, shrunk!) : null,
      ranked_wallets: prior.wallets,
      min_markets: SKILL_MIN_MARKETS,
      prior_sd: Math.sqrt(prior.priorVariance),
    },
  };
}

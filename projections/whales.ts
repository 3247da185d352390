/**
 * Whale flow: live accumulations (one wallet, one market, one token side) ranked by their current
 * burst (net buys since the last pause of at least the burst gap) or by their net total over the
 * window. Reads `whale_accumulations_v2`, which the rollup refresher keeps exact for every accumulation
 * above the coverage threshold; the window sums come from the fills kept with each accumulation.
 */
import { z } from 'zod';
import { clampEpochSeconds, clampUInt32 } from './params.ts';
import type { Store } from './store.ts';

export const WHALE_RANKINGS = ['burst', 'window'] as const;
type WhaleRanking = (typeof WHALE_RANKINGS)[number];

export interface WhaleFlowRequest {
  /** Clamped up to the coverage threshold. */
  minUsd: number;
  by: WhaleRanking;
  windowHours: number;
  limit: number;
  nowSeconds: number;
}

const whaleRowSchema = z.object({
  wallet: z.string(),
  name: z.string().nullable(),
  condition_id: z.string(),
  title: z.string().nullable(),
  token_side: z.union([z.literal(1), z.literal(2)]),
  outcome: z.string().nullable(),
  burst_usd: z
    .number()
    .meta({ description: "Net buys (USD) since this accumulation's last pause of at least burst_gap_s seconds." }),
  burst_started_at: z.int(),
  burst_fills: z.int(),
  window_usd: z.number().meta({ description: 'Net buys over the whole window.' }),
  window_fills: z.int(),
  avg_price: z
    .number()
    .nullable()
    .meta({ description: "Token-weighted average UP-space price of the window's buys; null without buys." }),
  last_fill_at: z.int(),
  last_price: z.number().meta({ description: 'UP space.' }),
});

export type WhaleRow = z.infer<typeof whaleRowSchema>;

export const whaleFlowSchema = z.object({
  rows: z.array(whaleRowSchema),
  count: z.int(),
  by: z.enum(WHALE_RANKINGS),
  window_h: z.int(),
  min_usd: z.number().meta({ description: 'The threshold applied (after clamping up to coverage.exact_above_usd).' }),
  burst_gap_s: z.int(),
  coverage: z.object({
    exact_above_usd: z
      .number()
      .meta({ description: 'Accumulations above this are tracked exactly; min_usd is clamped up to it.' }),
    as_of: z.int().nullable().meta({ description: 'Latest fill reflected (epoch seconds).' }),
  }),
});
export type WhaleFlow = z.infer<typeof whaleFlowSchema>;

/**
 * The window's keys come from whale_recent (sorted by last fill: a range read), their newest versions
 * from whale_accumulations_v2 by primary key (ORDER BY version DESC LIMIT 1 BY key: ReplacingMergeTree's
 * rule, without FINAL over the whole table); then the filter on the newest version (migration 0008).
 * Names and titles are read for the window's wallets and markets only (by the primary keys of
 * trader_names and markets_meta_v2), not over both tables.
 */
const READ_WHALES = `
WITH ranked AS
(
    SELECT
        wallet,
        condition_id,
        token_side,
        burst_usd,
        burst_started_at,
        burst_fills,
        arraySum((usd, t) -> if(t >= {cutoff:UInt32} AND t <= {now:UInt32}, usd, 0), recent_net_usd, recent_ts) AS window_usd,
        toUInt32(arrayCount(t -> t >= {cutoff:UInt32} AND t <= {now:UInt32}, recent_ts)) AS window_fills,
        arraySum((price, tokens, t) -> if(t >= {cutoff:UInt32} AND t <= {now:UInt32}, price * tokens, 0), recent_up_price, recent_buy_tokens, recent_ts) AS window_buy_value,
        arraySum((tokens, t) -> if(t >= {cutoff:UInt32} AND t <= {now:UInt32}, tokens, 0), recent_buy_tokens, recent_ts) AS window_buy_tokens,
        last_fill_at,
        last_price,
        if({by:String} = 'window', window_usd, burst_usd) AS ranking_usd
    FROM
    (
        SELECT *
        FROM {db:Identifier}.whale_accumulations_v2
        WHERE (wallet, condition_id, token_side) IN
        (
            SELECT wallet, condition_id, token_side FROM {db:Identifier}.whale_recent WHERE last_fill_at >= {cutoff:UInt32}
        )
        ORDER BY version DESC
        LIMIT 1 BY wallet, condition_id, token_side
    )
    -- Live: last filled within the window (rows filled after now belong to a later read).
    WHERE tracked AND last_fill_at >= {cutoff:UInt32} AND last_fill_at <= {now:UInt32}
)
SELECT
    r.wallet AS wallet,
    n.name AS name,
    r.condition_id AS condition_id,
    m.title AS title,
    r.token_side AS token_side,
    if(r.token_side = 1, m.outcome1, m.outcome2) AS outcome,
    r.burst_usd AS burst_usd,
    r.burst_started_at AS burst_started_at,
    r.burst_fills AS burst_fills,
    r.window_usd AS window_usd,
    r.window_fills AS window_fills,
    if(r.window_buy_tokens > 0, r.window_buy_value / r.window_buy_tokens, NULL) AS avg_price,
    r.last_fill_at AS last_fill_at,
    r.last_price AS last_price
FROM
(
    SELECT * FROM ranked
    WHERE ranking_usd >= {min_usd:Float64}
    ORDER BY ranking_usd DESC, last_fill_at DESC, wallet, condition_id, token_side
    LIMIT {limit:UInt32}
) AS r
LEFT JOIN
(
    SELECT wallet, name FROM {db:Identifier}.trader_names FINAL
    WHERE wallet IN (SELECT wallet FROM {db:Identifier}.whale_recent WHERE last_fill_at >= {cutoff:UInt32})
) AS n ON n.wallet = r.wallet
LEFT JOIN
(
    SELECT condition_id, title, outcome1, outcome2 FROM {db:Identifier}.markets_meta_v2 FINAL
    WHERE condition_id IN (SELECT condition_id FROM {db:Identifier}.whale_recent WHERE last_fill_at >= {cutoff:UInt32})
) AS m ON m.condition_id = r.condition_id
ORDER BY if({by:String} = 'window', r.window_usd, r.burst_usd) DESC, r.last_fill_at DESC, r.wallet, r.condition_id, r.token_side`;

const READ_COVERAGE_AS_OF = `SELECT max(last_fill_at) AS as_of FROM {db:Identifier}.whale_accumulations_v2`;

export async function readWhaleFlow(
  store: Store,
  request: WhaleFlowRequest,
  coverage: { exactAboveUsd: number; burstGapSeconds: number },
): Promise<WhaleFlow> {
  const minUsd = Math.max(request.minUsd, coverage.exactAboveUsd);
  const cutoff = request.nowSeconds - request.windowHours * 3600;
  const [rows, asOf] = await Promise.all([
    store.query<WhaleRow>(READ_WHALES, {
      cutoff: clampEpochSeconds(cutoff),
      now: clampEpochSeconds(request.nowSeconds),
      by: request.by,
      min_usd: minUsd,
      limit: clampUInt32(request.limit),
    }),
    store.query<{ as_of: number }>(READ_COVERAGE_AS_OF),
  ]);
  const asOfTs = asOf[0]?.as_of ?? 0;
  return {
    rows,
    count: rows.length,
    by: request.by,
    window_h: request.windowHours,
    min_usd: minUsd,
    burst_gap_s: coverage.burstGapSeconds,
    coverage: { exact_above_usd: coverage.exactAboveUsd, as_of: asOfTs > 0 ? asOfTs : null },
  };
}

-- What the redemptions of the (wallet, market) pairs staged under the given batches say about their markets, for the
-- markets that have no stated resolution (projections/resolution-inference.ts decides). Run right after
-- refresh_trader_markets.sql, whose newest rows of the same pairs give what each wallet held. One row per pair that
-- redeemed tokens: the tokens redeemed at each payout per token (validated on ingest to be 0, 0.5 or 1: the nearest
-- says which, as the rollup tells them), the first redemption's time, and the holdings bought, split and merged
-- (conversions aside: the markets a neg-risk conversion touches are resolved on chain).
SELECT l.wallet AS wallet, l.condition_id AS condition_id, l.won_tokens AS won_tokens, l.lost_tokens AS lost_tokens,
       l.split_tokens AS split_tokens, l.first_ts AS first_ts, m.held1 AS held1, m.held2 AS held2
FROM
(
    SELECT wallet, condition_id,
           sumIf(tokens, usd * 4 > tokens * 3) AS won_tokens,
           sumIf(tokens, usd * 4 < tokens) AS lost_tokens,
           sum(tokens) - won_tokens - lost_tokens AS split_tokens,
           min(ts) AS first_ts
    FROM
    (
        -- One row per leg (a repeated leg is the same event: any copy).
        SELECT wallet, condition_id, leg_id, tokens, usd, ts
        FROM {db:Identifier}.position_legs_v2
        WHERE wallet IN (SELECT wallet FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)})
          AND (wallet, condition_id) IN (SELECT wallet, condition_id FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)})
          AND kind = 'REDEEM' AND tokens > 0
        LIMIT 1 BY wallet, condition_id, leg_id
    )
    WHERE condition_id NOT IN (
        SELECT condition_id FROM {db:Identifier}.market_resolutions_v2
        WHERE inferred = 0
          AND condition_id IN (SELECT condition_id FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)}))
    GROUP BY wallet, condition_id
) AS l
INNER JOIN
(
    SELECT wallet, condition_id,
           side1_buy_tokens - side1_sell_tokens + split_tokens - merge_tokens AS held1,
           side2_buy_tokens - side2_sell_tokens + split_tokens - merge_tokens AS held2
    FROM {db:Identifier}.trader_markets_v2
    WHERE wallet IN (SELECT wallet FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)})
      AND (wallet, condition_id) IN (SELECT wallet, condition_id FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)})
    ORDER BY version DESC
    LIMIT 1 BY wallet, condition_id
) AS m ON m.wallet = l.wallet AND m.condition_id = l.condition_id
ORDER BY condition_id, wallet

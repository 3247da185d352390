-- Recomputes trader_skill_markets (migration 0020) for the (wallet, market) pairs staged in rollup_keys under the given
-- batches: one row per resolved market in which the wallet bought, holding what the skill answer, its prior and the
-- leaderboard sum (projections/skill.ts). Run right after refresh_trader_markets.sql, whose rows of the same pairs it
-- reads (their newest version, which also versions this row), with the pairs' buys from fills_v2 (each fill's copy
-- with the highest source_rank, as the rollup keeps) and the market's latest resolution.
--
-- known_ts is the instant from which the row is what the service knew: the resolution, or a fill after it (a
-- market's figures change with a fill stamped after its resolution; legs after it, redemptions, merges, do not
-- change a resolved market's pnl). A read as of an instant sums the rows known by then.
--
-- Calibration by price bucket (ten, [0, 0.1) … [0.9, 1]): per bucket the buys, tokens, Σ tokens × price and
-- Σ tokens × what the bought outcome paid per token; `squared` is Σ tokens × (price − payout)².
INSERT INTO {db:Identifier}.trader_skill_markets
SELECT
    wallet,
    condition_id,
    any(resolution_ts) AS resolved_ts,
    greatest(resolved_ts, coalesce(any(last_fill_ts), 0)) AS known_ts,
    any(market_pnl_usd) AS pnl_usd,
    any(market_buy_usd) AS cost_usd,
    any(market_buy_tokens) AS tokens_bought,
    any(held) AS held_to_resolution,
    sumForEach(arrayMap(index -> toUInt32(index = bucket), range(10))) AS bucket_buys,
    sumForEach(arrayMap(index -> if(index = bucket, tokens, 0.), range(10))) AS bucket_tokens,
    sumForEach(arrayMap(index -> if(index = bucket, tokens * price, 0.), range(10))) AS bucket_price_tokens,
    sumForEach(arrayMap(index -> if(index = bucket, tokens * payout, 0.), range(10))) AS bucket_payout_tokens,
    sum(tokens * pow(price - payout, 2)) AS squared,
    any(market_version) AS version
FROM
(
    SELECT f.wallet AS wallet, f.condition_id AS condition_id, f.tokens AS tokens, f.price AS price, f.bucket AS bucket,
           if(f.token_side = 1, assumeNotNull(m.up_payout), 1 - assumeNotNull(m.up_payout)) AS payout,
           r.ts AS resolution_ts, m.last_fill_ts AS last_fill_ts, m.pnl_usd AS market_pnl_usd,
           m.buy_usd AS market_buy_usd, m.buy_tokens AS market_buy_tokens, m.version AS market_version,
           m.redeem_tokens > 0.000001 OR abs(m.net_tokens1) + abs(m.net_tokens2) > 0.000001 AS held
    FROM
    (
        SELECT wallet, condition_id, token_side, size_tokens AS tokens, usd / size_tokens AS price,
               least(9, toUInt8(floor(price * 10))) AS bucket
        FROM
        (
            -- Each fill's kept copy, as the market row counts it; its buys.
            SELECT wallet, condition_id, fill_id, side, token_side, size_tokens, usd
            FROM {db:Identifier}.fills_v2
            WHERE wallet IN (SELECT wallet FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)})
              AND (wallet, condition_id) IN (SELECT wallet, condition_id FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)})
            ORDER BY source_rank DESC
            LIMIT 1 BY wallet, condition_id, fill_id
        )
        WHERE side = 'BUY'
    ) AS f
    INNER JOIN
    (
        SELECT wallet, condition_id, resolved, up_payout, pnl_usd, buy_usd, buy_tokens, redeem_tokens, net_tokens1,
               net_tokens2, last_fill_ts, version
        FROM {db:Identifier}.trader_markets_v2
        WHERE wallet IN (SELECT wallet FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)})
          AND (wallet, condition_id) IN (SELECT wallet, condition_id FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)})
        ORDER BY version DESC
        LIMIT 1 BY wallet, condition_id
    ) AS m ON m.wallet = f.wallet AND m.condition_id = f.condition_id
    INNER JOIN
    (
        -- Each market's resolution: a stated one before an inferred one, then the latest (migration 0026), without FINAL.
        SELECT condition_id, ts
        FROM {db:Identifier}.market_resolutions_v2
        WHERE condition_id IN (SELECT condition_id FROM {db:Identifier}.rollup_keys WHERE batch IN {batches:Array(String)})
        ORDER BY inferred, ts DESC
        LIMIT 1 BY condition_id
    ) AS r ON r.condition_id = f.condition_id
    WHERE m.resolved AND m.buy_usd > 0 AND m.up_payout IS NOT NULL
)
GROUP BY wallet, condition_id

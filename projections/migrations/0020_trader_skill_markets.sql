-- Per wallet and resolved market, what the skill answer, its prior and the leaderboard sum (issue 39): the market's
-- pnl and cost (edge = Σ pnl ÷ Σ cost), whether tokens were held to the resolution, and its buys' calibration sums
-- by price bucket. The prior and the leaderboard were one aggregate over every wallet's trader_markets_v2 rows and
-- buys per request period; they now sum these narrow rows, which the rollup refresher keeps current for the pairs
-- each write touches (projections/rollups/refresh_trader_skill_markets.sql, run right after the trader_markets
-- refresh), as it keeps trader_markets_v2. One row per market rather than one per wallet: a window (markets
-- resolved since) and an instant (`as_of`: rows known by then) are sums over a wallet's rows.
--
-- resolved_ts is the market's latest resolution; known_ts the instant from which the row is what the service knew
-- (the resolution, or a fill of the wallet stamped after it). version is the trader_markets_v2 row's it was read from.
--
-- Idempotent: the table is created if missing; the backfill (the refresh's statement over every pair, from the newest
-- rows) repeated inserts the same versions, which ReplacingMergeTree collapses.

CREATE TABLE IF NOT EXISTS {db:Identifier}.trader_skill_markets
(
    wallet               String,
    condition_id         String,
    resolved_ts          UInt32,
    known_ts             UInt32,
    pnl_usd              Float64,
    cost_usd             Float64,
    tokens_bought        Float64,
    held_to_resolution   Bool,
    bucket_buys          Array(UInt32),
    bucket_tokens        Array(Float64),
    bucket_price_tokens  Array(Float64),
    bucket_payout_tokens Array(Float64),
    squared              Float64,
    version              UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (wallet, condition_id)
SETTINGS index_granularity = 256;

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
            SELECT wallet, condition_id, fill_id, token_side, size_tokens, usd
            FROM {db:Identifier}.fills_v2
            WHERE side = 'BUY'
            ORDER BY source_rank DESC
            LIMIT 1 BY wallet, condition_id, fill_id
        )
    ) AS f
    INNER JOIN
    (
        SELECT wallet, condition_id, resolved, up_payout, pnl_usd, buy_usd, buy_tokens, redeem_tokens, net_tokens1,
               net_tokens2, last_fill_ts, version
        FROM {db:Identifier}.trader_markets_v2
        ORDER BY version DESC
        LIMIT 1 BY wallet, condition_id
    ) AS m ON m.wallet = f.wallet AND m.condition_id = f.condition_id
    INNER JOIN
    (
        -- Each market's latest resolution (ReplacingMergeTree(ts)'s rule, without FINAL).
        SELECT condition_id, ts
        FROM {db:Identifier}.market_resolutions_v2
        ORDER BY ts DESC
        LIMIT 1 BY condition_id
    ) AS r ON r.condition_id = f.condition_id
    WHERE m.resolved AND m.buy_usd > 0 AND m.up_payout IS NOT NULL
)
GROUP BY wallet, condition_id;

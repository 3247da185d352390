-- Price projections: the per-second tape and its fidelity ladder, and whale accumulations.

-- One table holds every rung of the fidelity ladder (1 s … 30 d), fed by two views over the trades. A
-- bucket keeps
--   last_trade = max((ts, seq, up_price)): the final trade of the bucket (ties broken by price),
--   lo / hi    = the extreme prices printed in it,
-- all in UP space and all real traded levels. max/min are insensitive to a replayed trade, so the
-- ladder needs no recomputation; readers merge unmerged parts with GROUP BY. The 1 s rung comes from
-- the trades directly; the coarser rungs (all multiples of 5 s) from the block's 5 s buckets, which
-- carry the same max/min with fewer rows (half the cost of bucketing every trade for every rung). The
-- rungs are listed once more in projections/prices.ts (FIDELITY_LADDER); a test keeps them equal.
CREATE TABLE IF NOT EXISTS {db:Identifier}.price_ladder
(
    condition_id String,
    fidelity     UInt32,
    ts           UInt32,
    last_trade   SimpleAggregateFunction(max, Tuple(UInt32, UInt64, Float64)),
    lo           SimpleAggregateFunction(min, Float64),
    hi           SimpleAggregateFunction(max, Float64)
)
ENGINE = AggregatingMergeTree
ORDER BY (condition_id, fidelity, ts);

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.price_ladder_seconds_from_trades
TO {db:Identifier}.price_ladder
AS SELECT condition_id, toUInt32(1) AS fidelity, ts, max((ts, seq, up_price)) AS last_trade, min(up_price) AS lo, max(up_price) AS hi
   FROM {db:Identifier}.trades
   GROUP BY condition_id, ts;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.price_ladder_rungs_from_trades
TO {db:Identifier}.price_ladder
AS SELECT
       condition_id,
       fidelity,
       intDiv(bucket_5s, fidelity) * fidelity AS ts,
       max(last_5s) AS last_trade,
       min(lo_5s) AS lo,
       max(hi_5s) AS hi
   FROM
   (
       SELECT condition_id, intDiv(ts, 5) * 5 AS bucket_5s, max((ts, seq, up_price)) AS last_5s, min(up_price) AS lo_5s, max(up_price) AS hi_5s
       FROM {db:Identifier}.trades
       GROUP BY condition_id, bucket_5s
   )
   ARRAY JOIN [5, 15, 60, 300, 900, 3600, 14400, 86400, 604800, 2592000] AS fidelity
   GROUP BY condition_id, fidelity, ts;

-- The full tape, change-only: a second's (last, lo, hi) is kept only when it differs from the second
-- before it. Whether a second is a change depends on its neighbour, so this cannot be a view: the trades
-- insert stages (market, earliest second) under its deduplication token, and the rollup refresher
-- recomputes each touched market from that second on (a late trade re-decides the seconds after it).
-- Rows that stop being changes are deleted (ReplacingMergeTree's is_deleted); the newest recomputation
-- wins.
CREATE TABLE IF NOT EXISTS {db:Identifier}.tape_keys
(
    batch        String,
    condition_id String,
    from_ts      UInt32,
    staged_at    DateTime('UTC') DEFAULT now()
)
ENGINE = MergeTree
PARTITION BY toStartOfHour(staged_at)
ORDER BY (batch, condition_id)
TTL staged_at + INTERVAL 1 DAY
SETTINGS ttl_only_drop_parts = 1;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.tape_keys_from_trades
TO {db:Identifier}.tape_keys
AS SELECT getSetting('insert_deduplication_token') AS batch, condition_id, min(ts) AS from_ts
   FROM {db:Identifier}.trades
   GROUP BY condition_id;

CREATE TABLE IF NOT EXISTS {db:Identifier}.tape_changes
(
    condition_id String,
    ts           UInt32,
    last         Float64,
    lo           Float64,
    hi           Float64,
    is_deleted   UInt8,
    version      UInt64
)
ENGINE = ReplacingMergeTree(version, is_deleted)
ORDER BY (condition_id, ts);

-- Whale accumulations: one wallet, one market, one token side. Recomputed by the rollup refresher for
-- the (wallet, market) pairs a write touched, from the deduplicated fills, like trader_markets. The
-- current burst (fills since the last pause of at least the burst gap) is precomputed; the fills of
-- the 24 hours up to the last fill are kept as arrays, so that any window (≤ 24 h before now, hence
-- within them) is summed exactly at read time. `tracked` is false below the coverage threshold.
CREATE TABLE IF NOT EXISTS {db:Identifier}.whale_accumulations
(
    wallet            String,
    condition_id      String,
    token_side        UInt8,
    tracked           Bool,
    last_fill_at      UInt32,
    last_price        Float64,
    burst_usd         Float64,
    burst_buy_usd     Float64,
    burst_started_at  UInt32,
    burst_fills       UInt32,
    -- the fills of [last_fill_at − 24 h, last_fill_at], in time order
    recent_ts         Array(UInt32),
    recent_net_usd    Array(Float64),
    recent_buy_tokens Array(Float64),
    recent_up_price   Array(Float64),
    version           UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (wallet, condition_id, token_side)
TTL toDateTime(last_fill_at, 'UTC') + INTERVAL 3 DAY;

-- The upstream provider's leaderboard as the poller reads it (topic upstream.leaderboard): the popular
-- shelf's members. One row per board read and rank; readers take the latest read of the configured board.
-- A read is 50 rows an hour by default (about 440k rows a year): kept, no TTL (a TTL on as_of would drop
-- replayed history on insert).

CREATE TABLE IF NOT EXISTS {db:Identifier}.upstream_leaderboard
(
    period        LowCardinality(String),
    metric        LowCardinality(String),
    as_of         UInt32,
    rank          UInt32,
    wallet        String,
    name          String,
    profile_image String,
    pnl           Float64,
    vol           Float64
)
ENGINE = ReplacingMergeTree
ORDER BY (period, metric, as_of, rank)
SETTINGS non_replicated_deduplication_window = 1000;

-- Leaderboard names count as the provider's names too (the shelf and the name lookup show them).
CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.trader_names_from_leaderboard
TO {db:Identifier}.trader_names
AS SELECT wallet, name, as_of FROM {db:Identifier}.upstream_leaderboard WHERE name != '';

-- The upstream provider's leaderboard as the poller reads it (topic upstream.leaderboard): the popular
-- shelf's members. One row per board read and rank; readers take the latest read of the configured board.
-- Old reads expire after 30 days (a shelf only ever shows the latest one).

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
TTL toDateTime(as_of) + INTERVAL 30 DAY
SETTINGS non_replicated_deduplication_window = 1000;

-- Leaderboard names count as the provider's names too (the shelf and the name lookup show them).
CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.trader_names_from_leaderboard
TO {db:Identifier}.trader_names
AS SELECT wallet, name, as_of FROM {db:Identifier}.upstream_leaderboard WHERE name != '';

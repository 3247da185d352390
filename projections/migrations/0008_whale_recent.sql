-- Whale flow keyed by what it filters on. The ranking asks for tracked accumulations whose last fill is
-- within the window (at most 24 h); whale_accumulations is keyed by (wallet, market, side), so that
-- filter read the whole table (FINAL). whale_recent holds, for every tracked version the rollup
-- refresher writes, its last fill and its key, sorted by last_fill_at: the read takes the keys of the
-- window from a range of this small table, then their newest versions from whale_accumulations by its
-- primary key, and keeps those still tracked and filled in the window.
--
-- Correct without deduplicating here: a key's newest version has its latest last_fill_at; if that
-- version is tracked it is in whale_recent under that time, and if any version of the key is in the
-- window, the newest one is filled at or after it. Rebuilt from the log with whale_accumulations (the
-- view below), and backfilled from it once here. Rows expire with whale_accumulations' own rows.
CREATE TABLE IF NOT EXISTS {db:Identifier}.whale_recent
(
    last_fill_at UInt32,
    wallet       String,
    condition_id String,
    token_side   UInt8
)
ENGINE = ReplacingMergeTree
PARTITION BY toDate(toDateTime(last_fill_at, 'UTC'))
ORDER BY (last_fill_at, wallet, condition_id, token_side)
TTL toDateTime(last_fill_at, 'UTC') + INTERVAL 3 DAY
SETTINGS ttl_only_drop_parts = 1, index_granularity = 1024;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.whale_recent_from_accumulations
TO {db:Identifier}.whale_recent
AS SELECT last_fill_at, wallet, condition_id, token_side
   FROM {db:Identifier}.whale_accumulations
   WHERE tracked;

INSERT INTO {db:Identifier}.whale_recent (last_fill_at, wallet, condition_id, token_side)
SELECT last_fill_at, wallet, condition_id, token_side
FROM {db:Identifier}.whale_accumulations
WHERE tracked;

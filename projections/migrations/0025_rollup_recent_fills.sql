-- The rollup refresh reads what changed, not the touched wallets' histories (issue 46). The refresh
-- recomputes each staged (wallet, market) pair from its fills; read from fills_v2, sorted by (wallet,
-- condition_id, fill_id), the pairs a refresh touches are scattered by their hashed market ids among all of
-- a wallet's markets, so their granules were most of the wallet's granules: the refresh's cost followed the
-- active wallets' histories and ingest slowed as the store grew.
--
-- fills_recent holds the fills of the last day (by the fill's own time) in (wallet, ts, condition_id,
-- fill_id) order, every column the rollups read. A pair whose every fill is recent (its first event after
-- the bound the refresh passes, projections/rollups.ts) is read from it as a range of each touched wallet's
-- recent fills; an older pair is read by its key from fills_v2 as before. The view writes only fills of the
-- last day, so the table stays the size of a day of trading whatever the history (an archive backfill of old
-- days writes nothing here), and whole days expire with their partition. The bound the refresh uses stays
-- an hour inside the day, so every copy of a fill it reads here has landed here.
--
-- rollup_keys gains from_ts, the earliest time of the staged copies of each pair (0 for rows staged before:
-- read as old, by key), so that a refresh knows how far back its pairs reach. rollup_refresh_pairs holds, per
-- refresh, which of its pairs are recent: computed once, read by each of the refresh's statements.
--
-- Idempotent: tables and views are created once; the backfill, if repeated, inserts copies the reads choose
-- among as among any copies (each fill's highest source_rank); the views' queries are replaced by the same.
-- The view is created before its backfill, so no fill landing in between is missed.

CREATE TABLE IF NOT EXISTS {db:Identifier}.fills_recent
(
    wallet       String,
    ts           UInt32,
    condition_id String,
    fill_id      String,
    side         LowCardinality(String),
    token_side   UInt8,
    up_price     Float64,
    size_tokens  Float64,
    usd          Float64,
    fee_usd      Float64,
    era          LowCardinality(String),
    source_rank  UInt8
)
ENGINE = ReplacingMergeTree(source_rank)
PARTITION BY toDate(toDateTime(ts, 'UTC'))
ORDER BY (wallet, ts, condition_id, fill_id)
TTL toDateTime(ts, 'UTC') + INTERVAL 2 DAY
SETTINGS index_granularity = 256, ttl_only_drop_parts = 1;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.fills_recent_from_fills
TO {db:Identifier}.fills_recent
AS SELECT wallet, ts, condition_id, fill_id, side, token_side, up_price, size_tokens, usd, fee_usd, era, source_rank
   FROM {db:Identifier}.fills
   WHERE ts >= toUInt32(now()) - 86400;

INSERT INTO {db:Identifier}.fills_recent (wallet, ts, condition_id, fill_id, side, token_side, up_price, size_tokens, usd, fee_usd, era, source_rank)
SELECT wallet, ts, condition_id, fill_id, side, token_side, up_price, size_tokens, usd, fee_usd, era, source_rank
FROM {db:Identifier}.fills
WHERE ts >= toUInt32(now()) - 86400;

ALTER TABLE {db:Identifier}.rollup_keys ADD COLUMN IF NOT EXISTS from_ts UInt32 DEFAULT 0;

ALTER TABLE {db:Identifier}.rollup_keys_from_fills MODIFY QUERY
SELECT getSetting('insert_deduplication_token') AS batch, wallet, condition_id, min(ts) AS from_ts
FROM {db:Identifier}.fills
GROUP BY wallet, condition_id;

ALTER TABLE {db:Identifier}.rollup_keys_from_legs MODIFY QUERY
SELECT getSetting('insert_deduplication_token') AS batch, wallet, condition_id, min(ts) AS from_ts
FROM {db:Identifier}.position_legs
GROUP BY wallet, condition_id;

CREATE TABLE IF NOT EXISTS {db:Identifier}.rollup_refresh_pairs
(
    refresh      String,
    wallet       String,
    condition_id String,
    recent       Bool,
    recent_from  UInt32,
    made_at      DateTime('UTC') DEFAULT now()
)
ENGINE = MergeTree
PARTITION BY toStartOfHour(made_at)
ORDER BY (refresh, recent, wallet, condition_id)
TTL made_at + INTERVAL 2 HOUR
SETTINGS ttl_only_drop_parts = 1;

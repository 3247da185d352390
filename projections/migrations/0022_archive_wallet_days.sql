-- The wallets with recent archive fills, by day (issue 46: periodic jobs cost what changed, not the
-- tables). The upstream poller asks every tick for the wallets with archive fills in the last week, most
-- recent first (projections/upstream.ts, readRecentArchiveWallets). Read from `fills`, sorted by wallet, a
-- filter on ts reads every granule of the table: at the real market's size, a billion rows per tick.
--
-- archive_wallet_days keeps each wallet's last archive fill per day (source_rank 2: the chain's copy, not
-- the upstream's), sorted by (day, wallet): a week's read takes the key range of its days, a row per wallet
-- active on each day, whatever the history behind it. A maximum is what a duplicate or a replay cannot
-- change, so the view needs no recomputation.
--
-- Idempotent: the table and view are created once; the backfill, if repeated, adds the same maxima. The view
-- is created before the backfill, so no fill landing in between is missed.

CREATE TABLE IF NOT EXISTS {db:Identifier}.archive_wallet_days
(
    day     Date,
    wallet  String,
    last_ts SimpleAggregateFunction(max, UInt32)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(day)
ORDER BY (day, wallet);

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.archive_wallet_days_from_fills
TO {db:Identifier}.archive_wallet_days
AS SELECT toDate(toDateTime(ts)) AS day, wallet, max(ts) AS last_ts
   FROM {db:Identifier}.fills
   WHERE source_rank = 2
   GROUP BY day, wallet;

INSERT INTO {db:Identifier}.archive_wallet_days (day, wallet, last_ts)
SELECT toDate(toDateTime(ts)) AS day, wallet, max(ts) AS last_ts
FROM {db:Identifier}.fills
WHERE source_rank = 2
GROUP BY day, wallet;

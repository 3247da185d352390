-- The rollup refresh reads what changed, not the touched wallets' histories (issue 46). The refresh
-- recomputes each staged (wallet, market) pair from its fills. Read from fills_v2 (index granularity 256),
-- the pairs a refresh touches lie scattered by their hashed market ids among all of a wallet's markets, and a
-- granule holds the fills of many of them: a refresh touching a few pairs of a wallet read most of the
-- wallet's granules, so its cost followed the active wallets' histories and ingest slowed as the store grew.
--
-- fills_by_pair holds the columns the rollups read in the same order as fills_v2, in granules of 32 rows: a
-- pair's fills are read with at most a granule or two of its neighbours', so a refresh reads the touched
-- pairs' fills and little else, however many markets their wallets traded. fills_v2 stays the reads' copy
-- (its granules suit a wallet's or a market's pages). The extra primary index is a mark per 32 rows.
--
-- Idempotent: the table and view are created once; the backfill, if repeated, inserts rows the engine
-- collapses (ReplacingMergeTree on the same key, the highest source_rank kept), and the refresh keeps each
-- fill's copy of the highest source_rank as it reads. The view is created before its backfill, so no fill
-- landing in between is missed.

CREATE TABLE IF NOT EXISTS {db:Identifier}.fills_by_pair
(
    wallet       String,
    condition_id String,
    fill_id      String,
    side         LowCardinality(String),
    token_side   UInt8,
    up_price     Float64,
    size_tokens  Float64,
    usd          Float64,
    fee_usd      Float64,
    era          LowCardinality(String),
    ts           UInt32,
    source_rank  UInt8
)
ENGINE = ReplacingMergeTree(source_rank)
ORDER BY (wallet, condition_id, fill_id)
SETTINGS index_granularity = 32;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.fills_by_pair_from_fills
TO {db:Identifier}.fills_by_pair
AS SELECT wallet, condition_id, fill_id, side, token_side, up_price, size_tokens, usd, fee_usd, era, ts, source_rank
   FROM {db:Identifier}.fills;

INSERT INTO {db:Identifier}.fills_by_pair (wallet, condition_id, fill_id, side, token_side, up_price, size_tokens, usd, fee_usd, era, ts, source_rank)
SELECT wallet, condition_id, fill_id, side, token_side, up_price, size_tokens, usd, fee_usd, era, ts, source_rank
FROM {db:Identifier}.fills;

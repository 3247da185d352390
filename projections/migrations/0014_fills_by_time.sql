-- A wallet's fills in time order (issue 17: sort keys that match each read's filter). The fills page
-- (projections/fills.ts) is the monitoring primitive: keyset-paged on (ts, condition_id, fill_id) and polled
-- with `since`. Read from fills_v2, sorted by (wallet, condition_id, fill_id), a page had to read every copy of
-- every fill of the wallet, choose each fill's kept copy and sort them all, whatever `since`: a market
-- maker's page of 100 read tens of thousands of rows (bench:ingest's reads alongside, in
-- test/bench/RESULTS.md), and a wallet of a million fills would read a million per poll.
--
-- fills_by_time holds the same rows in (wallet, ts, condition_id, fill_id) order, with the fields a page
-- returns serialized as fills_v2's `fill_row` is (0013; the same expression over the same types, so the same
-- text). A page reads its window in order and stops after a few hundred rows; a copy of the top source rank
-- is its fill's kept copy as it is, and a position with only lower-ranked copies is confirmed by primary key
-- in fills_v2 (the fill's highest source_rank over all its copies, whatever their ts), so copies of one fill
-- that disagree on ts are shown once, at the kept copy's ts, exactly as before.
--
-- Idempotent: the table and view are created once; the backfill, if repeated, inserts rows the engine
-- collapses (ReplacingMergeTree on the same key) and that the page's reads choose among as among copies.
-- The view is created before the backfill, so no fill landing in between is missed.

CREATE TABLE IF NOT EXISTS {db:Identifier}.fills_by_time
(
    wallet       String,
    ts           UInt32,
    condition_id String,
    fill_id      String,
    source_rank  UInt8,
    fill_row     String
)
ENGINE = ReplacingMergeTree(source_rank)
ORDER BY (wallet, ts, condition_id, fill_id)
SETTINGS index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.fills_by_time_from_fills
TO {db:Identifier}.fills_by_time
AS SELECT wallet, ts, condition_id, fill_id, source_rank,
          formatRowNoNewline('JSONEachRow', side, up_price, token_side, size_tokens, usd) AS fill_row
   FROM {db:Identifier}.fills;

INSERT INTO {db:Identifier}.fills_by_time (wallet, ts, condition_id, fill_id, source_rank, fill_row)
SELECT wallet, ts, condition_id, fill_id, source_rank, formatRowNoNewline('JSONEachRow', side, up_price, token_side, size_tokens, usd)
FROM {db:Identifier}.fills;

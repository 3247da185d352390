-- Resolutions by source (issue 47): a market's resolution is stated (the chain, Gamma, the CLOB feed, the
-- simulator: `inferred` 0) or inferred from its redemptions (`inferred` 1, source 'redemptions'; the rollup
-- refresh infers it: projections/rollups/infer_resolutions.sql). A stated resolution supersedes an inferred
-- one whatever their times: both rows are kept (the sort key gains `inferred`), and every read that picks
-- a market's resolution takes the stated one first, then the latest (ORDER BY inferred, ts DESC LIMIT 1 BY
-- condition_id). Under the old key ReplacingMergeTree(ts) would have kept the later row, which is the
-- inferred one: redemptions follow the resolution they prove. Stored rows were all stated and read
-- `inferred` 0 (a column added to a sort key cannot have a default) and `source` '' (not recorded then).
--
-- A market row (trader_markets_v2) names the source of the resolution it was computed with, and its
-- serialization (wallet_row) gains it after the fields it had (wallet-markets.ts, WALLET_MARKET_FIELDS);
-- MATERIALIZE COLUMN rewrites the stored rows in the background.
--
-- Idempotent: a column added once, the same sort key and expressions set again, the view replaced.

ALTER TABLE {db:Identifier}.market_resolutions ADD COLUMN IF NOT EXISTS inferred UInt8, MODIFY ORDER BY (condition_id, inferred);

ALTER TABLE {db:Identifier}.market_resolutions ADD COLUMN IF NOT EXISTS source LowCardinality(String);

ALTER TABLE {db:Identifier}.market_resolutions_v2 ADD COLUMN IF NOT EXISTS inferred UInt8, MODIFY ORDER BY (condition_id, inferred);

ALTER TABLE {db:Identifier}.market_resolutions_v2 ADD COLUMN IF NOT EXISTS source LowCardinality(String);

DROP VIEW IF EXISTS {db:Identifier}.market_resolutions_v2_from_resolutions;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.market_resolutions_v2_from_resolutions
TO {db:Identifier}.market_resolutions_v2
AS SELECT condition_id, winner_token_side, payout1, payout2, ts, inferred, source
   FROM {db:Identifier}.market_resolutions;

ALTER TABLE {db:Identifier}.trader_markets_v2 ADD COLUMN IF NOT EXISTS resolution_source LowCardinality(String);

ALTER TABLE {db:Identifier}.trader_markets_v2 MODIFY COLUMN wallet_row String MATERIALIZED formatRowNoNewline('JSONEachRow',
    condition_id, resolved, winner_token_side, up_payout, pnl_usd, buy_usd, sell_usd, buy_tokens, fills_count,
    first_ts, last_ts, last_action, last_price, net_tokens1, net_tokens2, cash_flow_usd, era,
    buy_count, sell_count, buy_up_price_tokens,
    side1_buy_count, side1_sell_count, side1_buy_usd, side1_sell_usd, side1_buy_tokens,
    side2_buy_count, side2_sell_count, side2_buy_usd, side2_sell_usd, side2_buy_tokens,
    last_fill_ts, redeem_tokens, resolution_source);

ALTER TABLE {db:Identifier}.trader_markets_v2 MATERIALIZE COLUMN wallet_row;

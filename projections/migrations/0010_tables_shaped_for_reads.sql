-- Tables shaped for their reads (issue 17). Every hot read of these tables is a point lookup or a short
-- range by the leading columns of the sort key, and a key holds a handful of rows (one per market of a
-- trader, one per fill, one per market), but the tables were made with the default index granularity of
-- 8,192 rows: a point read read whole 8,192-row granules (a trader's market read most of trader_markets).
-- The granularity of a table cannot be altered, so the re-shaped tables are new ones, named `<table>_v2`
-- with the same columns, keys and engines and an index granularity sized to the rows per key:
--
--   trader_markets_v2       (wallet, condition_id)              256   the rollup per trader and market
--   whale_accumulations_v2  (wallet, condition_id, token_side)  256   whale flow's newest versions by key
--   market_marks_v2         condition_id                        256   each market's last trade (view on trades)
--   fills_v2                (wallet, condition_id, fill_id)     256   the fills as the reads and the rollup
--                                                                      refresh use them (view on fills)
--   position_legs_v2        (wallet, condition_id, leg_id)      256   the legs, for the rollup refresh (view)
--   markets_meta_v2         condition_id                        256   titles and outcome names (view)
--   market_resolutions_v2   condition_id                        256   resolutions (view)
--
-- careers is not re-shaped: the card folds a trader's career from its trader_markets_v2 rows, which it
-- reads anyway for the open markets (projections/careers.ts), so that no refresh re-reads a trader's
-- whole career when one of its markets changes; 0011 drops careers with the replaced tables.
--
-- fills, position_legs, markets_meta and market_resolutions stay the landing tables the ingest worker
-- writes (their deduplication tokens and views are unchanged); each `_v2` of them is its read copy,
-- fed by a view on the same insert (the insert's deduplication token covers it). The rollup refresher
-- writes the `_v2` rollups. Rebuilt from the log like the tables they replace (rule 1 of the design).
--
-- This migration backfills each new table from the one it replaces: the rollups from their newest
-- versions (FINAL), the view-fed tables as they are (their rows are deduplicated or merged by the same
-- engine). Idempotent: a repeat creates nothing, and a backfill repeated inserts rows the engine
-- collapses (ReplacingMergeTree keeps one version of a key; the marks' argMax/max/min are unchanged
-- by a repeated state). Each view is created before its backfill, so no row landing in between is
-- missed. The replaced tables are dropped by the next migration (0011), so that this one can always be
-- run again.

CREATE TABLE IF NOT EXISTS {db:Identifier}.trader_markets_v2
(
    wallet             String,
    condition_id       String,
    fills_count        UInt32,
    buy_count          UInt32,
    sell_count         UInt32,
    buy_usd            Float64,
    sell_usd           Float64,
    buy_tokens         Float64,
    buy_up_price_tokens Float64,
    side1_buy_count    UInt32,
    side1_sell_count   UInt32,
    side1_buy_usd      Float64,
    side1_sell_usd     Float64,
    side1_buy_tokens   Float64,
    side1_sell_tokens  Float64,
    side2_buy_count    UInt32,
    side2_sell_count   UInt32,
    side2_buy_usd      Float64,
    side2_sell_usd     Float64,
    side2_buy_tokens   Float64,
    side2_sell_tokens  Float64,
    legs_count         UInt32,
    split_usd          Float64,
    split_tokens       Float64,
    merge_usd          Float64,
    merge_tokens       Float64,
    redeem_usd         Float64,
    redeem_tokens      Float64,
    first_fill_ts      Nullable(UInt32),
    last_fill_ts       Nullable(UInt32),
    first_ts           UInt32,
    last_ts            UInt32,
    last_action        LowCardinality(String),
    last_price         Nullable(Float64),
    last_token_side    UInt8,
    net_tokens1        Float64,
    net_tokens2        Float64,
    cash_flow_usd      Float64,
    resolved           Bool,
    winner_token_side  UInt8,
    pnl_usd            Float64,
    era                LowCardinality(String),
    version            UInt64,
    fee_usd            Float64 DEFAULT 0,
    up_payout          Nullable(Float64)
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (wallet, condition_id)
SETTINGS index_granularity = 256;

INSERT INTO {db:Identifier}.trader_markets_v2
SELECT * FROM {db:Identifier}.trader_markets FINAL;

CREATE TABLE IF NOT EXISTS {db:Identifier}.whale_accumulations_v2
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
    recent_ts         Array(UInt32),
    recent_net_usd    Array(Float64),
    recent_buy_tokens Array(Float64),
    recent_up_price   Array(Float64),
    version           UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (wallet, condition_id, token_side)
TTL toDateTime(last_fill_at, 'UTC') + INTERVAL 3 DAY
SETTINGS index_granularity = 256;

-- whale_recent (0008) follows the accumulations the refresher now writes.
CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.whale_recent_from_accumulations_v2
TO {db:Identifier}.whale_recent
AS SELECT last_fill_at, wallet, condition_id, token_side
   FROM {db:Identifier}.whale_accumulations_v2
   WHERE tracked;

DROP VIEW IF EXISTS {db:Identifier}.whale_recent_from_accumulations;

-- whale_recent already holds the backfilled rows' keys (0008's view and backfill); the insert below
-- adds them again through the new view, which ReplacingMergeTree collapses.
INSERT INTO {db:Identifier}.whale_accumulations_v2
SELECT * FROM {db:Identifier}.whale_accumulations FINAL;

CREATE TABLE IF NOT EXISTS {db:Identifier}.market_marks_v2
(
    condition_id  String,
    last_up_price AggregateFunction(argMax, Float64, Tuple(UInt32, UInt64)),
    last_ts       SimpleAggregateFunction(max, UInt32),
    first_ts      SimpleAggregateFunction(min, UInt32)
)
ENGINE = AggregatingMergeTree
ORDER BY condition_id
SETTINGS index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.market_marks_v2_from_trades
TO {db:Identifier}.market_marks_v2
AS SELECT condition_id,
          argMaxState(up_price, (ts, seq)) AS last_up_price,
          max(ts) AS last_ts,
          min(ts) AS first_ts
   FROM {db:Identifier}.trades
   GROUP BY condition_id;

INSERT INTO {db:Identifier}.market_marks_v2 (condition_id, last_up_price, last_ts, first_ts)
SELECT condition_id, last_up_price, last_ts, first_ts FROM {db:Identifier}.market_marks;

DROP VIEW IF EXISTS {db:Identifier}.market_marks_from_trades;

-- One row per (wallet, fill id) after merges, the archive's copy (higher source_rank) kept, as in fills.
CREATE TABLE IF NOT EXISTS {db:Identifier}.fills_v2
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
SETTINGS index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.fills_v2_from_fills
TO {db:Identifier}.fills_v2
AS SELECT wallet, condition_id, fill_id, side, token_side, up_price, size_tokens, usd, fee_usd, era, ts, source_rank
   FROM {db:Identifier}.fills;

INSERT INTO {db:Identifier}.fills_v2 (wallet, condition_id, fill_id, side, token_side, up_price, size_tokens, usd, fee_usd, era, ts, source_rank)
SELECT wallet, condition_id, fill_id, side, token_side, up_price, size_tokens, usd, fee_usd, era, ts, source_rank
FROM {db:Identifier}.fills;

CREATE TABLE IF NOT EXISTS {db:Identifier}.position_legs_v2
(
    wallet       String,
    condition_id String,
    leg_id       String,
    kind         LowCardinality(String),
    tokens       Float64,
    usd          Float64,
    era          LowCardinality(String),
    ts           UInt32
)
ENGINE = ReplacingMergeTree
ORDER BY (wallet, condition_id, leg_id)
SETTINGS index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.position_legs_v2_from_legs
TO {db:Identifier}.position_legs_v2
AS SELECT wallet, condition_id, leg_id, kind, tokens, usd, era, ts
   FROM {db:Identifier}.position_legs;

INSERT INTO {db:Identifier}.position_legs_v2 (wallet, condition_id, leg_id, kind, tokens, usd, era, ts)
SELECT wallet, condition_id, leg_id, kind, tokens, usd, era, ts
FROM {db:Identifier}.position_legs;

CREATE TABLE IF NOT EXISTS {db:Identifier}.markets_meta_v2
(
    condition_id   String,
    title          String,
    slug           String,
    outcome1       String,
    outcome2       String,
    category       LowCardinality(String),
    title_start_ts Nullable(UInt32),
    end_ts         Nullable(UInt32),
    icon           String,
    version        UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY condition_id
SETTINGS index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.markets_meta_v2_from_markets_meta
TO {db:Identifier}.markets_meta_v2
AS SELECT condition_id, title, slug, outcome1, outcome2, category, title_start_ts, end_ts, icon, version
   FROM {db:Identifier}.markets_meta;

INSERT INTO {db:Identifier}.markets_meta_v2 (condition_id, title, slug, outcome1, outcome2, category, title_start_ts, end_ts, icon, version)
SELECT condition_id, title, slug, outcome1, outcome2, category, title_start_ts, end_ts, icon, version
FROM {db:Identifier}.markets_meta;

CREATE TABLE IF NOT EXISTS {db:Identifier}.market_resolutions_v2
(
    condition_id      String,
    winner_token_side UInt8,
    payout1           Nullable(UInt64),
    payout2           Nullable(UInt64),
    ts                UInt32
)
ENGINE = ReplacingMergeTree(ts)
ORDER BY condition_id
SETTINGS index_granularity = 256;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.market_resolutions_v2_from_resolutions
TO {db:Identifier}.market_resolutions_v2
AS SELECT condition_id, winner_token_side, payout1, payout2, ts
   FROM {db:Identifier}.market_resolutions;

INSERT INTO {db:Identifier}.market_resolutions_v2 (condition_id, winner_token_side, payout1, payout2, ts)
SELECT condition_id, winner_token_side, payout1, payout2, ts
FROM {db:Identifier}.market_resolutions;

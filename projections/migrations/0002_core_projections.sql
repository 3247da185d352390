-- Core projections derived from the landing tables.
--
-- Two kinds: materialized views whose aggregates are insensitive to a duplicate row (set membership,
-- latest-wins, argMax/max), so a replayed or double-sourced event changes nothing; and rollups that hold
-- sums (trader_markets, careers), which the ingest worker recomputes for the keys a batch touched from the
-- deduplicated (FINAL) landing tables. A sum fed by a view would count a fill that arrives from both
-- the archive and the upstream twice; a recomputation from FINAL cannot.

-- Which wallets hold a position in a market: drives recomputation when a market resolves.
CREATE TABLE IF NOT EXISTS {db:Identifier}.market_wallets
(
    condition_id String,
    wallet       String
)
ENGINE = ReplacingMergeTree
ORDER BY (condition_id, wallet);

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.market_wallets_from_fills
TO {db:Identifier}.market_wallets
AS SELECT DISTINCT condition_id, wallet FROM {db:Identifier}.fills;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.market_wallets_from_legs
TO {db:Identifier}.market_wallets
AS SELECT DISTINCT condition_id, wallet FROM {db:Identifier}.position_legs;

-- Display names: the latest name a source reported for a wallet wins.
CREATE TABLE IF NOT EXISTS {db:Identifier}.trader_names
(
    wallet String,
    name   String,
    as_of  UInt32
)
ENGINE = ReplacingMergeTree(as_of)
ORDER BY wallet;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.trader_names_from_profiles
TO {db:Identifier}.trader_names
AS SELECT wallet, name, as_of FROM {db:Identifier}.upstream_profiles WHERE name != '';

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.trader_names_from_fills
TO {db:Identifier}.trader_names
AS SELECT wallet, argMax(fill_name, fill_ts) AS name, max(fill_ts) AS as_of
   FROM (SELECT wallet, name AS fill_name, ts AS fill_ts FROM {db:Identifier}.fills WHERE name != '')
   GROUP BY wallet;

-- Name → wallet lookup (case-insensitive). Holds every name a wallet ever had; readers confirm the
-- wallet's current name in trader_names.
CREATE TABLE IF NOT EXISTS {db:Identifier}.trader_name_index
(
    name_key String,
    wallet   String,
    as_of    UInt32
)
ENGINE = ReplacingMergeTree(as_of)
ORDER BY (name_key, wallet);

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.trader_name_index_from_names
TO {db:Identifier}.trader_name_index
AS SELECT lowerUTF8(name) AS name_key, wallet, as_of FROM {db:Identifier}.trader_names;

-- The market's mark: its last trade print (UP space) and when it happened.
CREATE TABLE IF NOT EXISTS {db:Identifier}.market_marks
(
    condition_id  String,
    last_up_price AggregateFunction(argMax, Float64, Tuple(UInt32, UInt64)),
    last_ts       SimpleAggregateFunction(max, UInt32),
    first_ts      SimpleAggregateFunction(min, UInt32)
)
ENGINE = AggregatingMergeTree
ORDER BY condition_id;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.market_marks_from_trades
TO {db:Identifier}.market_marks
AS SELECT condition_id,
          argMaxState(up_price, (ts, seq)) AS last_up_price,
          max(ts) AS last_ts,
          min(ts) AS first_ts
   FROM {db:Identifier}.trades
   GROUP BY condition_id;

-- Keys a write touched, staged for the recomputation of trader_markets and careers. The views below
-- stage them as part of the very insert that lands the fills and legs (before offsets are committed),
-- under the insert's deduplication token as the batch id; the worker's rollup refresher recomputes the
-- staged keys of many writes at once, reading them with a subquery on `batch` so the SQL stays small
-- however many keys there are. A batch is done once it is in rollup_batches_done; a batch staged but
-- never marked done (its worker died) is picked up by any worker's sweep. Staging rows are dropped a
-- day later, a whole partition at a time.
CREATE TABLE IF NOT EXISTS {db:Identifier}.rollup_keys
(
    batch        String,
    wallet       String,
    condition_id String,
    staged_at    DateTime('UTC') DEFAULT now()
)
ENGINE = MergeTree
PARTITION BY toStartOfHour(staged_at)
ORDER BY (batch, wallet, condition_id)
TTL staged_at + INTERVAL 1 DAY
SETTINGS ttl_only_drop_parts = 1;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.rollup_keys_from_fills
TO {db:Identifier}.rollup_keys
AS SELECT DISTINCT getSetting('insert_deduplication_token') AS batch, wallet, condition_id
   FROM {db:Identifier}.fills;

CREATE MATERIALIZED VIEW IF NOT EXISTS {db:Identifier}.rollup_keys_from_legs
TO {db:Identifier}.rollup_keys
AS SELECT DISTINCT getSetting('insert_deduplication_token') AS batch, wallet, condition_id
   FROM {db:Identifier}.position_legs;

CREATE TABLE IF NOT EXISTS {db:Identifier}.rollup_batches_done
(
    batch   String,
    done_at DateTime('UTC') DEFAULT now()
)
ENGINE = ReplacingMergeTree
PARTITION BY toStartOfHour(done_at)
ORDER BY batch
TTL done_at + INTERVAL 2 DAY
SETTINGS ttl_only_drop_parts = 1;

-- Per trader and market: everything a market row, a summary and the card are built from.
-- Recomputed by the ingest worker (projections/rollups.ts). `version` grows with the inputs seen
-- (fills + legs, and resolution), so a recomputation from a later snapshot always replaces an earlier one.
CREATE TABLE IF NOT EXISTS {db:Identifier}.trader_markets
(
    wallet             String,
    condition_id       String,
    fills_count        UInt32,
    buy_count          UInt32,
    sell_count         UInt32,
    buy_usd            Float64,
    sell_usd           Float64,
    buy_tokens         Float64,
    -- sum(up_price × tokens) over buys: the UP-space volume-weighted entry is this over buy_tokens
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
    -- sells + merges + redemptions − buys − splits
    cash_flow_usd      Float64,
    resolved           Bool,
    winner_token_side  UInt8,
    -- resolved: the result (cash flow plus unredeemed winning tokens at 1.00); open: the cash flow
    pnl_usd            Float64,
    era                LowCardinality(String),
    version            UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (wallet, condition_id);

-- Per trader: the card's career statistics. Figures that depend on live marks (open value, marked pnl)
-- are added at read time from the open rows of trader_markets.
CREATE TABLE IF NOT EXISTS {db:Identifier}.careers
(
    wallet           String,
    markets_total    UInt32,
    resolved_total   UInt32,
    wins             UInt32,
    winrate          Nullable(Float64),
    volume_usd       Float64,
    first_seen       UInt32,
    last_seen        UInt32,
    fills_count      UInt64,
    buy_usd          Float64,
    buy_tokens       Float64,
    avg_entry_price  Nullable(Float64),
    avg_win_usd      Nullable(Float64),
    avg_loss_usd     Nullable(Float64),
    career_pnl_usd   Float64,
    open_markets     UInt32,
    version          UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY wallet;

-- Landing tables: one row per event, as the ingest worker writes them.
--
-- Every table deduplicates twice: insert blocks carry a deduplication token per topic-partition-offset
-- range (kept for the last 1000 blocks: non-replicated tables only do this when
-- non_replicated_deduplication_window is set), and ReplacingMergeTree on the event's id is the backstop
-- that readers rely on with FINAL. Timestamps are epoch seconds (UInt32); prices in the token's own frame
-- keep their name `price`, UP-space prices are `up_price`.

CREATE TABLE IF NOT EXISTS {db:Identifier}.markets_meta
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
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS {db:Identifier}.market_resolutions
(
    condition_id      String,
    winner_token_side UInt8,
    ts                UInt32
)
ENGINE = ReplacingMergeTree(ts)
ORDER BY condition_id
SETTINGS non_replicated_deduplication_window = 1000;

-- One fill per (wallet, fill id): the archive and the upstream copies of a fill collapse; the archive's
-- copy (higher source_rank) is the one kept.
CREATE TABLE IF NOT EXISTS {db:Identifier}.fills
(
    wallet       String,
    condition_id String,
    fill_id      String,
    side         LowCardinality(String),
    token_side   UInt8,
    price        Float64,
    up_price     Float64,
    size_tokens  Float64,
    usd          Float64,
    role         LowCardinality(String),
    era          LowCardinality(String),
    ts           UInt32,
    name         String,
    source_rank  UInt8
)
ENGINE = ReplacingMergeTree(source_rank)
ORDER BY (wallet, condition_id, fill_id)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS {db:Identifier}.position_legs
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
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS {db:Identifier}.trades
(
    condition_id String,
    ts           UInt32,
    seq          UInt64,
    trade_id     String,
    token_side   UInt8,
    price        Float64,
    up_price     Float64,
    size_tokens  Float64,
    usd          Float64,
    taker_side   LowCardinality(String)
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(toDateTime(ts, 'UTC'))
ORDER BY (condition_id, ts, seq, trade_id)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS {db:Identifier}.book_ticks
(
    condition_id String,
    ts           UInt32,
    seq          UInt64,
    bid          Nullable(Float64),
    ask          Nullable(Float64)
)
ENGINE = ReplacingMergeTree
PARTITION BY toYYYYMM(toDateTime(ts, 'UTC'))
ORDER BY (condition_id, ts, seq)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS {db:Identifier}.upstream_profiles
(
    wallet          String,
    name            String,
    profile_image   String,
    pnl             Float64,
    pnl_realized    Float64,
    pnl_unrealized  Float64,
    portfolio_value Float64,
    as_of           UInt32
)
ENGINE = ReplacingMergeTree(as_of)
ORDER BY wallet
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS {db:Identifier}.upstream_equity
(
    wallet  String,
    ts      UInt32,
    pnl_usd Float64
)
ENGINE = ReplacingMergeTree
ORDER BY (wallet, ts)
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS {db:Identifier}.upstream_status
(
    ts     UInt32,
    state  LowCardinality(String),
    detail String
)
ENGINE = ReplacingMergeTree
ORDER BY ts
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS {db:Identifier}.watchers
(
    wallet   String,
    watching UInt32,
    ts       UInt32
)
ENGINE = ReplacingMergeTree(ts)
ORDER BY wallet
SETTINGS non_replicated_deduplication_window = 1000;

CREATE TABLE IF NOT EXISTS {db:Identifier}.accounts
(
    account_id   String,
    plan         LowCardinality(String),
    founder      Bool,
    display_name String,
    version      UInt64,
    deleted      Bool
)
ENGINE = ReplacingMergeTree(version)
ORDER BY account_id
SETTINGS non_replicated_deduplication_window = 1000;

-- Keys are stored only as SHA-256; authentication looks them up by hash.
CREATE TABLE IF NOT EXISTS {db:Identifier}.api_keys
(
    key_sha256 String,
    key_id     String,
    account_id String,
    label      String,
    last4      String,
    created_at UInt32,
    revoked_at Nullable(UInt32),
    version    UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (key_sha256, key_id)
SETTINGS non_replicated_deduplication_window = 1000;

-- Events that failed to parse or validate; the same records go to the dead-letter topic.
CREATE TABLE IF NOT EXISTS {db:Identifier}.dead_letters
(
    topic       String,
    partition   UInt32,
    offset      UInt64,
    reason      String,
    original_base64 String,
    received_at UInt32
)
ENGINE = ReplacingMergeTree
ORDER BY (topic, partition, offset)
SETTINGS non_replicated_deduplication_window = 1000;

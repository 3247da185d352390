-- Recorded sessions (tapes): metadata and StreamEvents as the `tapes` and `tape.events` topics publish
-- them. Both tables lead their sort key with the owning account, so every tape read carries the owner
-- predicate in its primary-key prefix (another account's tape is simply not found). ReplacingMergeTree
-- on the event id is the backstop of the insert deduplication tokens, as on every landing table.

CREATE TABLE IF NOT EXISTS {db:Identifier}.tapes
(
    account_id    String,
    tape_id       String,
    wallet        String,
    name          String,
    condition_id  String,
    title         String,
    grade         LowCardinality(String),
    pnl_taped_usd Float64,
    outcome       String,
    started_at    UInt32,
    ended_at      UInt32,
    tick_count    UInt64,
    fill_count    UInt64,
    event_count   UInt64,
    size_bytes    UInt64,
    version       UInt64
)
ENGINE = ReplacingMergeTree(version)
ORDER BY (account_id, tape_id)
SETTINGS non_replicated_deduplication_window = 1000;

-- One row per event of a tape; `payload` is the StreamEvent's JSON ({type, ts, ...payload}) as published.
CREATE TABLE IF NOT EXISTS {db:Identifier}.tape_events
(
    account_id String,
    tape_id    String,
    seq        UInt64,
    type       LowCardinality(String),
    ts         UInt32,
    payload    String
)
ENGINE = ReplacingMergeTree
ORDER BY (account_id, tape_id, seq)
SETTINGS non_replicated_deduplication_window = 1000;
